// @ts-check
// The real host.mjs and sidecar.mjs in child processes, spoken to as the Go
// side does (requests on stdin, answers on file descriptor 3), on what needs
// no published package: the transport end to end, the errors of requests
// they cannot serve, and the sidecar on a stand-in World package laid out in
// a temporary directory.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const workspace = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/**
 * A script running in a child process.
 * @typedef {{
 *   call: (op: string, args?: object) => Promise<any>,
 *   raw: (line: string) => void,
 *   stderr: () => string,
 *   end: () => Promise<number | null>,
 * }} Child
 */

/**
 * start runs script (a file of the workspace) under node, as the Go side
 * does: stdin for requests, a pipe on file descriptor 3 for answers.
 * @param {string} script
 * @param {string[]} args
 * @param {string} cwd
 * @returns {Child}
 */
function start(script, args, cwd) {
  const child = spawn(process.execPath, [path.join(workspace, script), ...args], {
    cwd,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stdout?.on('data', (b) => { stderr += b; });
  child.stderr?.on('data', (b) => { stderr += b; });
  const exited = new Promise((done) => child.on('exit', (code) => done(code)));
  /** @type {Map<number, (answer: any) => void>} */
  const pending = new Map();
  const answers = /** @type {import('node:stream').Readable} */ (child.stdio[3]);
  readline.createInterface({ input: answers }).on('line', (line) => {
    const answer = JSON.parse(line);
    assert.ok(line.startsWith('{"id":'), `an answer that does not open with its id: ${line}`);
    pending.get(answer.id)?.(answer);
    pending.delete(answer.id);
  });
  let nextId = 0;
  return {
    call(op, args = {}) {
      const id = ++nextId;
      return new Promise((done) => {
        pending.set(id, done);
        child.stdin?.write(JSON.stringify({ ...args, id, op }) + '\n');
      });
    },
    raw(line) {
      child.stdin?.write(line + '\n');
    },
    stderr: () => stderr,
    async end() {
      child.stdin?.end();
      return exited;
    },
  };
}

/** @type {string} */
let tmp;

/**
 * write lays files out under tmp.
 * @param {Record<string, string | object>} files
 */
function write(files) {
  for (const [name, body] of Object.entries(files)) {
    const file = path.join(tmp, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, typeof body === 'string' ? body : JSON.stringify(body));
  }
}

// A stand-in for @workflow/world-local: an in-memory event log behind
// createLocalWorld, its list cursor "<createdAt ISO>|<eventId>" as the
// package's, and the @workflow/world beside it, whose schema drops
// step_started's data (a "bare" type).
const fakeWorldLocal = `
export function createLocalWorld(opts) {
  const events = [];
  let n = 0;
  return {
    opts,
    start: async () => {},
    close: async () => {},
    events: {
      async create(runId, data) {
        n++;
        const e = { ...data, runId, eventId: 'evnt_' + String(n).padStart(3, '0'), createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)) };
        events.push(e);
        return { event: e };
      },
      async list({ runId, pagination }) {
        let data = events.filter((e) => e.runId === runId);
        if (pagination.cursor) data = data.filter((e) => e.eventId > pagination.cursor.split('|')[1]);
        const hasMore = data.length > (pagination.limit ?? 100);
        data = data.slice(0, pagination.limit ?? 100);
        const last = data.at(-1);
        return { data, cursor: last ? last.createdAt.toISOString() + '|' + last.eventId : null, hasMore };
      },
    },
  };
}
`;

const fakeWorld = `
export const SPEC_VERSION_CURRENT = 3;
export const CreateEventSchema = {
  parse(x) {
    if (typeof x.eventType !== 'string') throw Object.assign(new Error('eventType: Required'), { name: 'ZodError' });
    if (x.eventType === 'step_started') {
      const { eventData, ...rest } = x;
      return rest;
    }
    return x;
  },
};
`;

before(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'stormctl-processes-')));
  write({
    'local/package.json': { name: '@workflow/world-local', version: '4.4.1-fake', type: 'module', exports: { '.': { import: './dist/index.js' } } },
    'local/dist/index.js': fakeWorldLocal,
    'local/node_modules/@workflow/world/package.json': { name: '@workflow/world', version: '4.5.0-fake', type: 'module', exports: './index.js' },
    'local/node_modules/@workflow/world/index.js': fakeWorld,
    'kit/package.json': { name: 'empty-kit', private: true },
  });
});

after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** @param {string} message */
const failed = (message) => ({ name: 'Error', message, code: '', status: 0 });

describe('sidecar.mjs', () => {
  it('answers hello with no packages, and exits 0 when stdin ends', async () => {
    const s = start('sidecar.mjs', [], tmp);
    const hello = await s.call('hello');
    assert.deepEqual(hello, { id: 1, result: { versions: {}, node: process.version, specs: {} } });
    assert.equal(await s.end(), 0);
  });

  it('answers requests it cannot serve with errors, and reports unreadable lines', async () => {
    const s = start('sidecar.mjs', [], tmp);
    assert.deepEqual(await s.call('nope'), { id: 1, error: failed('unknown op nope') });
    s.raw('{"id": 99, "op": ');
    s.raw('null');
    assert.deepEqual(await s.call('list', { handle: 99 }), { id: 2, error: failed('unknown handle 99') });
    assert.deepEqual(await s.call('open', { kind: 'local', dataDir: tmp }), { id: 3, error: failed('no package directory for local') });
    assert.deepEqual(await s.call('cancel', { target: 42 }), { id: 4, result: {} });
    assert.equal(await s.end(), 0);
    assert.match(s.stderr(), /sidecar: unreadable request: .*JSON/);
    assert.match(s.stderr(), /sidecar: unreadable request: not a JSON object: null/);
  });

  it('serves a World package: hello with its spec, open, create, list, close', async () => {
    const s = start('sidecar.mjs', ['--local', path.join(tmp, 'local')], tmp);
    const hello = (await s.call('hello', { specs: ['local'] })).result;
    assert.deepEqual(hello.versions, { '@workflow/world-local': '4.4.1-fake' });
    assert.deepEqual(hello.specs.local, { package: '@workflow/world-local', version: '4.4.1-fake', world: '4.5.0-fake', specVersion: 3, bare: ['step_started'] });

    const { handle } = (await s.call('open', { kind: 'local', dataDir: path.join(tmp, 'data') })).result;
    assert.equal(handle, 1);
    const created = [];
    for (const eventType of ['run_created', 'run_started', 'step_created']) {
      const answer = await s.call('create', { handle, runId: 'wrun_1', event: { eventType, correlationId: 'c' } });
      assert.equal(answer.result.event.eventType, eventType);
      assert.equal(answer.result.event.specVersion, 3, 'the schema stamped with the spec version');
      assert.equal('window' in answer.result, false);
      created.push(answer.result.event.eventId);
    }
    const windowed = await s.call('create', { handle, runId: 'wrun_1', event: { eventType: 'step_started', correlationId: 'c', eventData: { x: 1 } }, delayMs: 5 });
    assert.deepEqual(windowed.result.window, { asked: true, spent: null }, 'a package that writes no event file: the window found no point');
    assert.equal('eventData' in windowed.result.event, false);
    const refused = await s.call('create', { handle, runId: 'wrun_1', event: {} });
    assert.deepEqual(refused.error, { name: 'ZodError', message: 'eventType: Required', code: '', status: 0 });

    const page = (await s.call('list', { handle, runId: 'wrun_1', after: created[0], limit: 2 })).result;
    assert.deepEqual(page.events.map((/** @type {any} */ e) => e.eventId), created.slice(1));
    assert.equal(page.hasMore, true);
    const unseen = await s.call('list', { handle, runId: 'wrun_1', after: 'evnt_999' });
    assert.match(unseen.error.message, /an event this sidecar has not seen/);

    assert.deepEqual((await s.call('close', { handle })).result, {});
    assert.match((await s.call('close', { handle })).error.message, /unknown handle 1/);
    assert.equal(await s.end(), 0);
  });
});

describe('host.mjs', () => {
  it('answers what it cannot serve before open with errors, and exits 0 when stdin ends', async () => {
    const h = start('host.mjs', [], path.join(tmp, 'kit'));
    assert.deepEqual(await h.call('nope'), { id: 1, error: failed('unknown op nope') });
    assert.deepEqual(await h.call('start', { workflowId: 'w' }), { id: 2, error: failed('the host has no world: send open first') });
    assert.deepEqual(await h.call('status', { runId: 'r' }), { id: 3, error: failed('the host has no world: send open first') });
    h.raw('not json');
    assert.deepEqual(await h.call('open', {}), { id: 4, error: failed('open: workflows and steps bundle paths are required') });
    assert.deepEqual(await h.call('close'), { id: 5, result: {} });
    assert.equal(await h.end(), 0);
    assert.match(h.stderr(), /host: unreadable request: /);
  });

  it('refuses an unknown world, then every op that needs one, and a second open', async () => {
    const h = start('host.mjs', [], path.join(tmp, 'kit'));
    const want = failed('open: unknown world "nowhere" (want "local", "postgres", "vercel", "package" or "replay")');
    assert.deepEqual((await h.call('open', { world: 'nowhere', workflows: 'w.cjs', steps: 's.cjs' })).error, want);
    assert.deepEqual((await h.call('events', { runId: 'r' })).error, want);
    assert.deepEqual((await h.call('open', { world: 'local', workflows: 'w.cjs', steps: 's.cjs' })).error, failed('open: the host already has a world (one per process)'));
    assert.equal(await h.end(), 0);
  });

  it('answers a burst of requests, every one by its id', async () => {
    const h = start('host.mjs', [], path.join(tmp, 'kit'));
    const answers = await Promise.all(Array.from({ length: 200 }, () => h.call('start', { workflowId: 'w' })));
    assert.deepEqual(answers.map((a) => a.id), Array.from({ length: 200 }, (_, i) => i + 1));
    assert.equal(await h.end(), 0);
  });
});
