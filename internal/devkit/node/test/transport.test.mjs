// @ts-check
// lib/transport.mjs: the framing, the error shape and the request loop the
// host and the sidecar share, in process (test/processes.test.mjs runs the
// real scripts).

import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { bytesReplacer, encode, errorOf, LineWriter, serve } from '../lib/transport.mjs';

describe('errorOf', () => {
  /** @type {[string, any, import('../lib/transport.mjs').WireError][]} */
  const cases = [
    ['an Error', new Error('boom'), { name: 'Error', message: 'boom', code: '', status: 0 }],
    ['a TypeError', new TypeError('bad'), { name: 'TypeError', message: 'bad', code: '', status: 0 }],
    ['a system error', Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), { name: 'Error', message: 'refused', code: 'ECONNREFUSED', status: 0 }],
    ['a code on the cause', new Error('query failed', { cause: { code: '57P01' } }), { name: 'Error', message: 'query failed', code: '57P01', status: 0 }],
    ['an HTTP error', Object.assign(new Error('conflict'), { name: 'WorkflowAPIError', status: 409 }), { name: 'WorkflowAPIError', message: 'conflict', code: '', status: 409 }],
    ['a status on the cause', new Error('fetch failed', { cause: { status: 503 } }), { name: 'Error', message: 'fetch failed', code: '', status: 503 }],
    ['a status as text', Object.assign(new Error('x'), { status: '502' }), { name: 'Error', message: 'x', code: '', status: 502 }],
    ['a status that is no number', Object.assign(new Error('x'), { status: 'teapot' }), { name: 'Error', message: 'x', code: '', status: 0 }],
    ['a numeric code', Object.assign(new Error('x'), { code: 23505 }), { name: 'Error', message: 'x', code: '23505', status: 0 }],
    ['a thrown string', 'plain', { name: 'Error', message: 'plain', code: '', status: 0 }],
    ['undefined', undefined, { name: 'Error', message: 'undefined', code: '', status: 0 }],
    ['null', null, { name: 'Error', message: 'null', code: '', status: 0 }],
  ];
  for (const [name, err, want] of cases) {
    it(name, () => assert.deepEqual(errorOf(err), want));
  }
});

describe('encode', () => {
  it('writes one JSON line', () => {
    assert.equal(encode({ id: 1, result: { a: [1, 'b'] } }), '{"id":1,"result":{"a":[1,"b"]}}');
  });
  it('writes byte arrays and Buffers as world-local does, bigints as text', () => {
    const line = encode({ u: new Uint8Array([1, 2, 3]), b: Buffer.from('hi'), sub: new Uint8Array([9, 1, 2, 3]).subarray(1), n: 12n }, bytesReplacer);
    assert.deepEqual(JSON.parse(line), {
      u: { __type: 'Uint8Array', data: 'AQID' },
      b: { __type: 'Uint8Array', data: 'aGk=' },
      sub: { __type: 'Uint8Array', data: 'AQID' },
      n: '12',
    });
  });
  it('answers a result it cannot serialise without it, saying why', () => {
    /** @type {any} */
    const cycle = {};
    cycle.self = cycle;
    const got = JSON.parse(encode({ id: 7, result: cycle }));
    assert.equal(got.id, 7);
    assert.equal('result' in got, false);
    assert.match(got.unserializable, /circular/i);
  });
});

// sink collects what a LineWriter writes, write by write.
function sink() {
  /** @type {string[]} */
  const writes = [];
  const out = new Writable({
    write(chunk, _enc, done) {
      writes.push(chunk.toString());
      done();
    },
  });
  return { out, writes };
}

describe('LineWriter', () => {
  it('writes each line at once', () => {
    const { out, writes } = sink();
    const w = new LineWriter(out);
    w.send({ id: 1 });
    w.send({ id: 2 });
    assert.deepEqual(writes, ['{"id":1}\n', '{"id":2}\n']);
  });
  it('batched, writes one turn of lines in one write, in order', async () => {
    const { out, writes } = sink();
    const w = new LineWriter(out, { batch: true });
    w.send({ notice: 'op', n: 1 });
    w.send({ id: 1, result: {} });
    w.send({ notice: 'op', n: 2 });
    assert.deepEqual(writes, []);
    await nextTurn();
    assert.deepEqual(writes, ['{"notice":"op","n":1}\n{"id":1,"result":{}}\n{"notice":"op","n":2}\n']);
    w.send({ id: 2 });
    await nextTurn();
    assert.equal(writes.length, 2);
    assert.ok(w.ms >= 0);
  });
  it('end flushes what is pending', async () => {
    const { out, writes } = sink();
    const w = new LineWriter(out, { batch: true });
    w.send({ id: 1 });
    await new Promise((done) => w.end(() => done(undefined)));
    assert.deepEqual(writes, ['{"id":1}\n']);
  });
});

// loop runs serve over a stream of lines with ops, collecting what it
// sends and logs.
function loop(ops, extra = {}) {
  const input = new PassThrough();
  /** @type {any[]} */
  const sent = [];
  /** @type {string[]} */
  const logged = [];
  const closed = new Promise((done) => {
    serve({ name: 'test', ops, input, send: (msg) => sent.push(msg), log: (line) => logged.push(line), onClose: () => done(undefined), ...extra });
  });
  return { input, sent, logged, closed };
}

describe('serve', () => {
  const ops = {
    echo: async (/** @type {any} */ req) => ({ echo: req.value }),
    fail: async () => {
      throw Object.assign(new Error('no such run'), { name: 'NotFound', status: 404 });
    },
    slow: async () => {
      await new Promise((done) => setTimeout(done, 20));
      return 'slow';
    },
  };

  it('answers each request by id, in the order its op ends', async () => {
    const { input, sent, closed } = loop(ops);
    input.end('{"id":1,"op":"slow"}\n{"id":2,"op":"echo","value":"x"}\n{"id":3,"op":"fail"}\n');
    await closed;
    await new Promise((done) => setTimeout(done, 40));
    assert.deepEqual(sent, [
      { id: 2, result: { echo: 'x' } },
      { id: 3, error: { name: 'NotFound', message: 'no such run', code: '', status: 404 } },
      { id: 1, result: 'slow' },
    ]);
  });

  it('answers an unknown op with an error, prototype names included', async () => {
    const { input, sent, closed } = loop(ops);
    input.end('{"id":4,"op":"nope"}\n{"id":5,"op":"constructor"}\n{"id":6}\n');
    await closed;
    assert.deepEqual(sent, [
      { id: 4, error: { name: 'Error', message: 'unknown op nope', code: '', status: 0 } },
      { id: 5, error: { name: 'Error', message: 'unknown op constructor', code: '', status: 0 } },
      { id: 6, error: { name: 'Error', message: 'unknown op undefined', code: '', status: 0 } },
    ]);
  });

  it('reports a line that is not a JSON object, answers nothing, and goes on', async () => {
    const { input, sent, logged, closed } = loop(ops);
    input.end('{"id":1,"op":\nnull\n[1,2]\n42\n\n   \n{"id":2,"op":"echo","value":1}\r\n');
    await closed;
    await nextTurn();
    assert.deepEqual(sent, [{ id: 2, result: { echo: 1 } }]);
    assert.equal(logged.length, 4);
    for (const line of logged) assert.match(line, /^test: unreadable request: /);
  });

  it('runs each op inside run', async () => {
    /** @type {string[]} */
    const ran = [];
    const { input, sent, closed } = loop(ops, {
      run: (/** @type {() => Promise<any>} */ call) => {
        ran.push('run');
        return call();
      },
    });
    input.end('{"id":1,"op":"echo","value":2}\n');
    await closed;
    await nextTurn();
    assert.deepEqual(ran, ['run']);
    assert.deepEqual(sent, [{ id: 1, result: { echo: 2 } }]);
  });
});
