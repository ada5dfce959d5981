// @ts-check
// The transport stormctl's Node scripts (host.mjs, sidecar.mjs) speak with
// the Go side: one JSON object per line, requests on stdin, answers (and
// the host's notices) on file descriptor 3. docs/host-protocol.md and
// docs/sidecar-protocol.md say what the lines hold; this module holds what
// both scripts do alike: framing, answering, the shape of an error.
//
//   request  {"id": N, "op": OP, ...args}
//   answer   {"id": N, "result": ...} | {"id": N, "error": {name, message, code, status}}

import net from 'node:net';
import { performance } from 'node:perf_hooks';
import readline from 'node:readline';

/**
 * An error as it goes back to the Go side.
 * @typedef {{name: string, message: string, code: string, status: number}} WireError
 */

/**
 * A request: its id, its op and the op's arguments.
 * @typedef {{id?: number, op?: string, [arg: string]: any}} Request
 */

/**
 * An op: answers a request with its result, or rejects.
 * @typedef {(req: Request) => Promise<any>} Op
 */

/**
 * @typedef {(this: any, key: string, value: any) => any} Replacer
 */

/**
 * errorOf is the wire shape of a thrown value: its name, message, code (a
 * system or PostgreSQL code, its own or its cause's: "ECONNREFUSED",
 * "57P01") and HTTP status (its own or its cause's; 0 for none or one that
 * is not a number).
 * @param {any} err
 * @returns {WireError}
 */
export function errorOf(err) {
  const cause = err?.cause ?? {};
  return {
    name: String(err?.name ?? 'Error'),
    message: String(err?.message ?? err),
    code: String(err?.code ?? cause.code ?? ''),
    status: Number(err?.status ?? cause.status ?? 0) || 0,
  };
}

/**
 * bytesReplacer writes byte arrays as world-local's files do
 * ({"__type":"Uint8Array","data":"<base64>"}), not as index maps, and
 * bigints as their decimal text.
 * @param {string} _key
 * @param {any} value
 * @returns {any}
 */
export function bytesReplacer(_key, value) {
  if (value instanceof Uint8Array) {
    return { __type: 'Uint8Array', data: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  }
  if (value && value.type === 'Buffer' && Array.isArray(value.data) && Object.keys(value).length === 2) {
    return { __type: 'Uint8Array', data: Buffer.from(value.data).toString('base64') }; // a Buffer, after its toJSON
  }
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/**
 * encode is msg's line (without its newline). A message that cannot be
 * serialised (a cycle, a bigint without bytesReplacer) goes out without
 * its result and with why: {..., "unserializable": "<message>"}, so its
 * request is answered all the same.
 * @param {object} msg
 * @param {Replacer} [replacer]
 * @returns {string}
 */
export function encode(msg, replacer) {
  try {
    return JSON.stringify(msg, replacer);
  } catch (err) {
    return JSON.stringify({ ...msg, result: undefined, unserializable: String(err?.message ?? err) });
  }
}

/**
 * LineWriter writes messages, one JSON line each, to a stream: at once, or
 * (batch) every line sent in one turn of the event loop in one write, in
 * the order sent (a busy host sends thousands of notices a second; one
 * write each was a syscall each). ms is the time spent encoding and
 * writing, so far.
 */
export class LineWriter {
  /**
   * @param {import('node:stream').Writable} out
   * @param {{batch?: boolean, replacer?: Replacer}} [opts]
   */
  constructor(out, { batch = false, replacer } = {}) {
    this.out = out;
    this.batch = batch;
    this.replacer = replacer;
    /** @type {string[]} */
    this.pending = [];
    this.flushing = false;
    this.ms = 0;
  }

  /**
   * send writes msg's line.
   * @param {object} msg
   */
  send(msg) {
    const t0 = performance.now();
    this.sendLine(encode(msg, this.replacer));
    this.ms += performance.now() - t0;
  }

  /**
   * sendLine writes line, which holds one JSON value.
   * @param {string} line
   */
  sendLine(line) {
    if (!this.batch) {
      this.out.write(line + '\n');
      return;
    }
    this.pending.push(line + '\n');
    if (!this.flushing) {
      this.flushing = true;
      setImmediate(() => this.flush());
    }
  }

  /** flush writes the lines sent since the last flush, in one write. */
  flush() {
    this.flushing = false;
    if (this.pending.length === 0) return;
    const t0 = performance.now();
    const out = this.pending.join('');
    this.pending = [];
    this.out.write(out);
    this.ms += performance.now() - t0;
  }

  /**
   * end flushes and ends the stream; done is called once it is written.
   * @param {() => void} [done]
   */
  end(done) {
    this.flush();
    this.out.end(done);
  }
}

/**
 * answerPipe is the pipe the Go side reads answers from: file descriptor
 * 3, written asynchronously (Node writes stdout to a pipe synchronously,
 * which would stall every request behind the reader).
 * @param {number} [fd]
 * @returns {net.Socket}
 */
export function answerPipe(fd = 3) {
  return new net.Socket({ fd, readable: false });
}

/**
 * serve reads requests, one JSON object per line, from input and answers
 * each by id through send: {id, result} with what its op resolved to, or
 * {id, error} (errorOf) when the op rejected or there is none by that
 * name. Requests run concurrently, so answers come in the order their ops
 * end. A blank line is skipped; a line that is not a JSON object is
 * reported on log ("<name>: unreadable request: ...") and answered
 * nothing, since it has no id to answer by. run wraps each op's call (the
 * host runs it in an actor's context). onClose is called when input ends.
 * @param {{
 *   name: string,
 *   ops: Record<string, Op>,
 *   send: (msg: object) => void,
 *   input?: NodeJS.ReadableStream,
 *   run?: (call: () => Promise<any>) => Promise<any>,
 *   onClose?: () => void,
 *   log?: (line: string) => void,
 * }} o
 * @returns {readline.Interface}
 */
export function serve({ name, ops, send, input = process.stdin, run = (call) => call(), onClose, log = (line) => process.stderr.write(line) }) {
  const rl = readline.createInterface({ input, crlfDelay: Infinity });
  rl.on('line', (line) => {
    if (!line.trim()) return;
    /** @type {Request} */
    let req;
    try {
      req = JSON.parse(line);
    } catch (err) {
      log(`${name}: unreadable request: ${err.message}\n`);
      return;
    }
    if (req === null || typeof req !== 'object' || Array.isArray(req)) {
      log(`${name}: unreadable request: not a JSON object: ${line.slice(0, 200)}\n`);
      return;
    }
    const op = typeof req.op === 'string' && Object.hasOwn(ops, req.op) ? ops[req.op] : undefined;
    if (!op) {
      send({ id: req.id, error: { name: 'Error', message: `unknown op ${req.op}`, code: '', status: 0 } });
      return;
    }
    run(() => op(req)).then(
      (result) => send({ id: req.id, result }),
      (err) => send({ id: req.id, error: errorOf(err) }),
    );
  });
  if (onClose) rl.on('close', onClose);
  return rl;
}
