// @ts-check
// stormctl's devkit runtime host: runs the published Workflow DevKit runtime
// (@workflow/core and the workflow bundles @workflow/builders compiled) on one
// of the DevKit's own worlds (@workflow/world-local, @workflow/world-postgres,
// @workflow/world-vercel's storage with world-local's queue) for stormctl's
// devkit engine, and reports every read and write of the
// run's event log at the world boundary as it happens.
//
// One host per storm cell: `node host.mjs` with cwd = the kit directory (its
// node_modules holds @workflow/core, @workflow/world-local,
// [@workflow/world-postgres,] @workflow/builders, workflow: stable/,
// beta-local/ or beta-postgres/ beside this file). The same script serves
// the 4.x line and the 5.0 betas, telling them apart by what the packages
// export.
//
// The protocol (transport, ops, notices, actors) and the facts about the
// packages this host relies on are in the repository's
// docs/host-protocol.md: the contract between this script and the Go
// engine (internal/devkit/devkitengine). A change to either side changes that page too.
// The transport and the package loading are lib/transport.mjs and
// lib/packages.mjs, shared with sidecar.mjs (docs/node-workspace.md).

import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import zlib from 'node:zlib';
import { importPackage, importResolved, installedVersion, readPackage } from './lib/packages.mjs';
import { parseInsert } from './lib/pgevents.mjs';
import { answerPipe, bytesReplacer, errorOf, LineWriter, serve as serveRequests } from './lib/transport.mjs';

const kit = process.cwd();
const kitRequire = createRequire(path.join(kit, 'package.json'));
const als = new AsyncLocalStorage();
// calls holds, inside one instrumented world call, the events the package
// published during it (seen at the storage: world-local's event files,
// world-postgres's INSERTs into workflow_events).
const calls = new AsyncLocalStorage();
const now = () => performance.timeOrigin + performance.now();

const WORLD_CACHE = Symbol.for('@workflow/world//cache');
const STUBBED_WORLD_CACHE = Symbol.for('@workflow/world//stubbedCache');
const FLOW_PREFIX = '__wkf_workflow_';
const STEP_PREFIX = '__wkf_step_';
const CANCEL_DRAIN_MS = 60_000;
const CLOSE_CAP_MS = 15_000;

// ---------------------------------------------------------------- transport

// answers carries answers and notices, every line of one turn of the event
// loop in one write (a step-storm host sends thousands of notices a second;
// one write each was a syscall each). Its ms is the time this host spent
// on stormctl's own recording (serialising notices and answers, and
// writing them): the health notices report it, so a storm can say what
// share of the host's CPU was the harness's and not the runtime's.
const answers = new LineWriter(answerPipe(), { batch: true, replacer: bytesReplacer });

/** @param {object} msg */
function send(msg) {
  answers.send(msg);
}

function notice(kind, fields) {
  send({ notice: kind, ...fields });
}

// noticeWithIds sends an op notice whose field (result of a list, snapshot
// of a create) is {ids, cursor, hasMore}: the ids of the events the read
// returned, in order. stormctl keeps of a read only what it saw (which
// events, in which order: history.jsonl's read summary), and the final
// log, read whole with the events op, carries every event; sending every
// page's events again (each replay of a run lists its whole log) was most
// of the host's recording, 13-22% of a world-postgres host's CPU, and most
// of stormctl's own decoding.
function noticeWithIds(n, field, events, cursor, hasMore) {
  const ids = Array.isArray(events) ? events.map((e) => (typeof e?.eventId === 'string' ? e.eventId : null)) : null;
  send({ notice: 'op', ...n, [field]: { ids, cursor: cursor ?? null, hasMore: hasMore ?? null } });
}

function actorNow() {
  return als.getStore()?.actor ?? 'runtime';
}

// ---------------------------------------------------------------- packages

// importFromKit imports a module as the kit resolves it.
async function importFromKit(spec) {
  return importResolved(kitRequire, spec);
}

async function loadBundle(file) {
  const abs = path.resolve(file);
  if (abs.endsWith('.mjs')) return import(pathToFileURL(abs).href);
  return createRequire(abs)(abs);
}

// Serialized values (4.8.9 and 5.0 alike): bytes opening with a 4-byte
// format tag: "devl" + devalue text, "gzip" + gzip of another tagged value
// (5.0 run_failed errors), "encr" (encrypted: not read here). Loaded from
// core's own devalue at open.
/** @type {any} */
let devalue = null;
// anyReviver keeps every custom type (Error, ...) as its plain fields
// (devalue looks revivers up with Object.hasOwn).
const identity = (v) => v;
const anyReviver = new Proxy({}, {
  get: () => identity,
  has: () => true,
  getOwnPropertyDescriptor: () => ({ value: identity, writable: true, enumerable: true, configurable: true }),
});

function decodeSerialized(x) {
  let bytes = x instanceof Uint8Array ? Buffer.from(x.buffer, x.byteOffset, x.byteLength)
    : x && x.__type === 'Uint8Array' && typeof x.data === 'string' ? Buffer.from(x.data, 'base64') : null;
  if (!bytes) return x;
  for (let i = 0; i < 4; i++) {
    const tag = bytes.subarray(0, 4).toString('latin1');
    if (tag === 'gzip') {
      bytes = zlib.gunzipSync(bytes.subarray(4));
      continue;
    }
    if (tag === 'devl' && devalue) return devalue.parse(bytes.subarray(4).toString('utf8'), anyReviver);
    break;
  }
  return undefined;
}

// errorMessageOf is the message of a run error as the package stores it:
// plain {message} in 4.x, serialized in 5.0.
function errorMessageOf(e) {
  if (e == null) return null;
  if (typeof e === 'string') return e;
  if (typeof e.message === 'string') return e.message;
  try {
    const d = decodeSerialized(e);
    if (typeof d === 'string') return d;
    if (d && typeof d.message === 'string') return d.message;
  } catch {
    // not readable
  }
  return null;
}

// ---------------------------------------------------------------- per-run stats

const runs = new Map();

function statsOf(runId) {
  let s = runs.get(runId);
  if (!s) {
    s = {
      invocations: 0,
      steps: 0,
      inflight: 0,
      inflightSteps: 0,
      maxConcurrent: 0,
      redeliveries: 0,
      retries: 0,
      recoveries: 0,
      recoveryQueued: 0,
      skipped: 0,
      divergences: [],
      cancelled: false,
      drained: [],
      messages: {},
    };
    runs.set(runId, s);
  }
  return s;
}

function settleDrain(s) {
  if (s.inflight === 0 && s.inflightSteps === 0) {
    for (const resolve of s.drained.splice(0)) resolve();
  }
}

// ---------------------------------------------------------------- health

// startHealth sends, every intervalMs, how busy this host was over the last
// interval: its event loop's utilisation (the share of the time the loop
// ran callbacks rather than waiting: 1 is a saturated loop, whose every
// delivery waits for the others), the loop's delay (how late a timer
// fired: p50, p99, max in ms), the process's CPU (user and system ms, the
// libuv thread pool's file reads included), the ms of it that were
// stormctl's own recording, and the deliveries in flight. stormctl admits
// new runs by it and judges a run that did not end against it: a run whose
// host was saturated was starved by the harness, not stuck in the runtime.
function startHealth(intervalMs) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  let elu = performance.eventLoopUtilization();
  let cpu = process.cpuUsage();
  let rec = answers.ms;
  let at = now();
  const timer = setInterval(() => {
    const t = now();
    const e = performance.eventLoopUtilization(elu);
    const c = process.cpuUsage(cpu);
    let deliveries = 0;
    let busyRuns = 0;
    for (const s of runs.values()) {
      const n = s.inflight + s.inflightSteps;
      deliveries += n;
      if (n > 0) busyRuns++;
    }
    notice('health', {
      at: t,
      span: t - at,
      elu: e.utilization,
      delayP50: delay.percentile(50) / 1e6,
      delayP99: delay.percentile(99) / 1e6,
      delayMax: delay.max / 1e6,
      cpuUser: c.user / 1000,
      cpuSystem: c.system / 1000,
      recordMs: answers.ms - rec,
      deliveries,
      busyRuns,
    });
    elu = performance.eventLoopUtilization();
    cpu = process.cpuUsage();
    rec = answers.ms;
    at = t;
    delay.reset();
  }, intervalMs);
  timer.unref();
}

// ---------------------------------------------------------------- the world

/**
 * What the host runs: its world (the packages' objects are untyped: any).
 * @type {{
 *   opened: Promise<any> | null, world: any, kind: string | null, core: any,
 *   server: any, pool: any, closing: Promise<void> | null, invSeq: number,
 *   stepSeq: number, batchSeq: number, lastFailed: Map<string, boolean>, schemas?: any, flow?: any,
 *   workflowsBundle?: string,
 * }}
 */
const state = {
  opened: null, // the open promise
  world: null,
  kind: null,
  core: null,
  server: null,
  pool: null,
  closing: null,
  invSeq: 0,
  stepSeq: 0,
  batchSeq: 0, // createBatch calls: numbers each call's notice (notice.batch)
  lastFailed: new Map(), // messageId -> true while its last delivery failed
};

// instrument wraps the world's event calls and queue in place, so every
// caller (core's copies in the bundles, the host's own) goes through them.
function instrument(world) {
  const ev = world.events;
  const create = ev.create.bind(ev);
  ev.create = async function instrumentedCreate(runId, data, params) {
    const actor = actorNow();
    const start = now();
    const args = {
      eventType: data?.eventType,
      correlationId: data?.correlationId,
      eventData: data?.eventData,
      specVersion: data?.specVersion,
      params,
    };
    const published = [];
    try {
      const res = await calls.run(published, () => create(runId, data, params));
      const n = { op: 'create', runId: runId ?? res?.event?.runId ?? res?.run?.runId ?? null, actor, start, end: now(), args, result: res?.event ?? null };
      if (res?.run?.startedAt) n.run = { startedAt: res.run.startedAt };
      const implicit = published.filter((e) => e.eventId !== res?.event?.eventId);
      if (implicit.length) n.implicit = implicit;
      if (res && (Array.isArray(res.events) || res.cursor !== undefined || res.hasMore !== undefined)) {
        noticeWithIds(n, 'snapshot', res.events, res.cursor, res.hasMore);
      } else {
        notice('op', n);
      }
      recordTerminalDivergence(n.runId, data);
      return res;
    } catch (err) {
      const n = { op: 'create', runId: runId ?? null, actor, start, end: now(), args, result: null, error: errorOf(err) };
      if (published.length) n.implicit = published;
      notice('op', n);
      recordTerminalDivergence(n.runId, data);
      throw err;
    }
  };
  if (typeof ev.createBatch === 'function') {
    const createBatch = ev.createBatch.bind(ev);
    ev.createBatch = async function instrumentedCreateBatch(runId, batch, params) {
      const actor = actorNow();
      const start = now();
      const args = { events: batch, params };
      const seq = ++state.batchSeq;
      const published = [];
      try {
        const res = await calls.run(published, () => createBatch(runId, batch, params));
        const n = { op: 'createBatch', batch: seq, runId, actor, start, end: now(), args, result: res };
        const returned = new Set((res?.results ?? []).map((r) => r?.event?.eventId).filter(Boolean));
        const implicit = published.filter((e) => !returned.has(e.eventId));
        if (implicit.length) n.implicit = implicit;
        notice('op', n);
        return res;
      } catch (err) {
        const n = { op: 'createBatch', batch: seq, runId, actor, start, end: now(), args, result: null, error: errorOf(err) };
        if (published.length) n.implicit = published;
        notice('op', n);
        throw err;
      }
    };
  }
  const list = ev.list.bind(ev);
  ev.list = async function instrumentedList(params) {
    const actor = actorNow();
    const start = now();
    const args = { pagination: params?.pagination, resolveData: params?.resolveData };
    const published = [];
    try {
      const page = await calls.run(published, () => list(params));
      const n = { op: 'list', runId: params?.runId ?? null, actor, start, end: now(), args };
      if (published.length) n.implicit = published;
      noticeWithIds(n, 'result', page?.data, page?.cursor, page?.hasMore);
      return page;
    } catch (err) {
      const n = { op: 'list', runId: params?.runId ?? null, actor, start, end: now(), args, result: null, error: errorOf(err) };
      if (published.length) n.implicit = published;
      notice('op', n);
      throw err;
    }
  };
  const queue = world.queue.bind(world);
  world.queue = async function instrumentedQueue(queueName, message, opts) {
    if (message?.replayDivergence && message?.runId) {
      recordDivergence(message.runId, message.replayDivergence);
    }
    if (typeof queueName === 'string' && queueName.startsWith(FLOW_PREFIX) && message?.runId) {
      const m = statsOf(message.runId).messages;
      const origin = messageOrigin(message);
      m[origin] = (m[origin] ?? 0) + 1;
    }
    return queue(queueName, message, opts);
  };
  return world;
}

// messageOrigin says what enqueued a flow message of a run, by the context
// it was enqueued in: the run's start ("start"), a hook resumed ("hook":
// the drivers' pokes and hook sends), a step that finished ("step"), a
// divergence's recovery replay ("recovery"), a flow invocation re-invoking
// its run ("flow"), anything else ("other"). Every flow message a delivery
// answers with a wake-up time (core's timeoutSeconds, while any wait of the
// run is pending) is delivered again then: the messages are what
// multiplies a run's invocations, and this says where they came from.
function messageOrigin(message) {
  const actor = actorNow();
  if (message.replayDivergence) return 'recovery';
  if (actor === 'starter') return 'start';
  if (actor === 'hook-sender') return 'hook';
  if (actor.startsWith('step-')) return 'step';
  if (actor.startsWith('inv-')) return 'flow';
  return 'other';
}

// published reports an event the package made visible in its storage: to
// the world call it happened in (its notice lists it under "implicit" unless
// it is the event the call returned), or, outside any world call, as a
// notice of its own {"notice":"op","op":"write","runId","actor","start","end","result": event}.
function published(event, list = calls.getStore(), actor = actorNow()) {
  if (list) {
    list.push(event);
    return;
  }
  const t = now();
  notice('op', { op: 'write', runId: event.runId ?? null, actor, start: t, end: t, args: null, result: event });
}

// watchLocalFiles sees world-local's event files: each is written to
// <dataDir>/events/<runId>-<eventId>.json.tmp.<ulid> and published by a hard
// link to <runId>-<eventId>.json (world-local fs.js writeExclusive, 4.4.1
// and 5.0 alike); the event is what the temp file held.
function watchLocalFiles(dataDir) {
  const eventsDir = path.join(path.resolve(dataDir), 'events') + path.sep;
  const staged = new Map();
  const fsp = fs.promises;
  const writeFile = fsp.writeFile;
  fsp.writeFile = /** @this {any} */ async function (file, data, ...rest) {
    const out = await writeFile.call(this, file, data, ...rest);
    if (typeof file === 'string' && file.startsWith(eventsDir) && /\.json\.tmp\./.test(file)) {
      staged.set(file, data);
    }
    return out;
  };
  const link = fsp.link;
  fsp.link = /** @this {any} */ async function (src, dst) {
    const data = typeof src === 'string' ? staged.get(src) : undefined;
    if (typeof src === 'string') staged.delete(src);
    const out = await link.call(this, src, dst);
    if (data !== undefined && typeof dst === 'string' && dst.startsWith(eventsDir) && /-evnt_\w+(\.[\w-]+)?\.json$/.test(dst)) {
      let event;
      try {
        event = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : String(data));
      } catch {
        event = { file: path.basename(dst) };
      }
      published(event);
    }
    return out;
  };
  const unlink = fsp.unlink;
  fsp.unlink = /** @this {any} */ async function (file, ...rest) {
    if (typeof file === 'string') staged.delete(file);
    return unlink.call(this, file, ...rest);
  };
  syncBuiltinESMExports();
}

// watchPostgresInserts sees world-postgres's INSERTs into
// "workflow"."workflow_events" (drizzle: insert into ... ("id", "type",
// "correlation_id", "created_at", "run_id", "payload", "payload_cbor",
// "spec_version") values ($1, ...) [returning "created_at" | on conflict do
// nothing]); a row counts as published when the statement reports it
// inserted. eventData is the row's payload_cbor decoded with the package's
// own cbor-x (its payload jsonb is legacy). The world call a statement
// belongs to is taken when pg.Pool#query is called (pg-pool runs the
// statement later, from whichever context released a client), or when a
// checked-out client's query is called (drizzle transactions).
const SEEN = Symbol('stormctl-host-seen');
function watchPostgresInserts(pg, cbor) {
  const wrap = (query) => /** @this {any} */ function (config, values, callback) {
    const text = typeof config === 'string' ? config : config?.text;
    if (typeof text !== 'string' || !/^\s*insert into "workflow"\."workflow_events"/i.test(text) ||
      (typeof config === 'object' && config[SEEN])) {
      return query.call(this, config, values, callback);
    }
    const cb = typeof values === 'function' ? values : callback;
    const params = (typeof config === 'object' && config?.values) || (Array.isArray(values) ? values : []);
    if (typeof config === 'string') config = { text: config };
    else config = { ...config };
    if (Array.isArray(values) && config.values === undefined) config.values = values;
    config[SEEN] = true;
    const list = calls.getStore();
    const actor = actorNow();
    const rows = parseInsert(text, params, cbor);
    const report = (res) => {
      const n = Number(res?.rowCount ?? 0);
      if (rows && n === rows.length) {
        const created = Array.isArray(res?.rows) ? res.rows : [];
        rows.forEach((ev, i) => {
          const c = created[i];
          if (ev.createdAt === undefined && c !== undefined) ev.createdAt = Array.isArray(c) ? c[0] : c.created_at ?? c.createdAt;
          published(ev, list, actor);
        });
      } else if (n > 0) {
        published({ unparsed: text, inserted: n }, list, actor);
      }
    };
    if (cb) {
      return query.call(this, config, (err, res) => {
        if (!err) report(res);
        cb(err, res);
      });
    }
    const out = query.call(this, config);
    if (out && typeof out.then === 'function') {
      return out.then((res) => {
        report(res);
        return res;
      });
    }
    return out;
  };
  pg.Pool.prototype.query = wrap(pg.Pool.prototype.query);
  pg.Client.prototype.query = wrap(pg.Client.prototype.query);
}

// recordTerminalDivergence counts the divergence of a run_failed core
// writes with CORRUPTED_EVENT_LOG (its invocation's fourth), whether or
// not the store took it: another invocation's run_failed may have ended the
// run first (world-local then refuses the later one), and the invocation
// diverged all the same, as its replay does.
function recordTerminalDivergence(runId, data) {
  if (!runId || data?.eventType !== 'run_failed' || data?.eventData?.errorCode !== 'CORRUPTED_EVENT_LOG') return;
  const store = als.getStore();
  if (store) store.divergenceMessage = errorMessageOf(data.eventData.error);
  recordDivergence(runId, null, true);
}

// recordDivergence counts one divergence core reported by queueing a
// recovery replay (a flow message carrying replayDivergence {eventId, count
// [, eventIds]}); the divergence's message is only in core's log line, which
// the console.warn hook below left in the caller's context just before.
function recordDivergence(runId, rd, terminal) {
  const store = als.getStore();
  const d = {
    message: store?.divergenceMessage ?? null,
    eventId: rd?.eventId ?? null,
    count: rd?.count ?? null,
    actor: store?.actor ?? 'runtime',
    at: now(),
  };
  if (rd?.eventIds) d.eventIds = rd.eventIds;
  if (terminal) d.terminal = true;
  if (store) store.divergenceMessage = undefined;
  const s = statsOf(runId);
  if (!terminal) s.recoveryQueued++;
  s.divergences.push(d);
  notice('divergence', { runId, ...d });
}

// Core's log line of a divergence: 4.x calls console.warn('[Workflow]
// Workflow replay diverged; queueing a recovery replay ...', {errorMessage,
// ...}); 5.0 composes one string (core log-format.js composeLogLine) with an
// "error <message>" row. The message is kept in the caller's context for the
// queue call that follows it; the line goes on to stderr unchanged.
const ANSI = /\x1b\[[0-9;]*m/g;
const warn = console.warn.bind(console);
console.warn = (...args) => {
  const [msg, meta] = args;
  if (typeof msg === 'string' && msg.includes('Workflow replay diverged; queueing a recovery replay')) {
    const store = als.getStore();
    /** @type {string | null} */
    let message = null;
    if (meta && typeof meta === 'object' && meta.errorMessage) {
      message = String(meta.errorMessage);
    } else {
      // "  error  <first line>" then continuation lines indented by 9 spaces
      // (core log-format.js formatPassthroughValue). Some 5.0 betas (35)
      // render no error row: the message is then not observable.
      const lines = msg.replace(ANSI, '').split('\n');
      const i = lines.findIndex((l) => /^ {2}error\s+/.test(l));
      if (i >= 0) {
        const parts = [lines[i].replace(/^ {2}error\s+/, '')];
        for (let j = i + 1; j < lines.length && lines[j].startsWith('         '); j++) parts.push(lines[j].slice(9));
        message = parts.join('\n');
      }
    }
    if (store) store.divergenceMessage = message;
  }
  warn(...args);
};

// deliver runs one queue delivery of the runtime's handler inside its
// actor's context, counting it for its run.
async function deliver(kind, handler, req) {
  const raw = Buffer.from(await req.arrayBuffer());
  let msg = {};
  try {
    msg = JSON.parse(raw.toString('utf8'));
  } catch {
    // not JSON: the handler answers it
  }
  const runId = (kind === 'flow' ? msg.runId : msg.workflowRunId) ?? msg.runId ?? null;
  const attempt = Number(req.headers.get('x-vqs-message-attempt') ?? 1);
  const queue = req.headers.get('x-vqs-queue-name') ?? '';
  const messageId = req.headers.get('x-vqs-message-id') ?? '';
  const actor = kind === 'flow' ? `inv-${++state.invSeq}` : `step-${++state.stepSeq}`;
  const s = runId ? statsOf(runId) : null;
  /** @type {Record<string, any>} */
  const base = { runId, actor, queue, messageId, attempt, kind };
  if (kind === 'flow' && msg.stepId) base.stepId = msg.stepId; // 5.0: a step run inside a flow delivery
  // The delivery's body as the queue sent it, which a replay delivers
  // again: 5.0 messages carry what the handler does first (runInput on a
  // run's first delivery, stepId on one that runs a step).
  if (kind === 'flow') base.body = { data: raw.toString('base64'), contentType: req.headers.get('content-type') ?? '' };
  const start = now();
  if (s?.cancelled) {
    s.skipped++;
    notice('invocation', { ...base, start, end: now(), status: 200, skipped: 'cancelled' });
    return Response.json({ ok: true });
  }
  const retry = state.lastFailed.get(messageId) === true;
  const recovery = kind === 'flow' && msg.replayDivergence ? msg.replayDivergence : undefined;
  if (s) {
    if (kind === 'flow') {
      s.invocations++;
      s.inflight++;
      s.maxConcurrent = Math.max(s.maxConcurrent, s.inflight);
      if (recovery) s.recoveries++;
    } else {
      s.steps++;
      s.inflightSteps++;
    }
    if (attempt > 1) s.redeliveries++;
    if (retry) s.retries++;
  }
  let status = 0;
  let error;
  try {
    const forwarded = new Request(req.url, { method: 'POST', headers: req.headers, body: raw });
    const res = await als.run({ actor, runId }, () => handler(forwarded));
    status = res.status;
    if (!res.ok) {
      const text = await res.clone().text().catch(() => '');
      error = { name: 'HTTPError', message: text.slice(0, 2000), code: '', status };
    }
    if (res.ok) state.lastFailed.delete(messageId);
    else state.lastFailed.set(messageId, true);
    return res;
  } catch (err) {
    error = errorOf(err);
    state.lastFailed.set(messageId, true);
    throw err;
  } finally {
    if (s) {
      if (kind === 'flow') s.inflight--;
      else s.inflightSteps--;
      settleDrain(s);
    }
    /** @type {Record<string, any>} */
    const n = { ...base, start, end: now(), status };
    if (recovery) n.recovery = recovery;
    if (error) n.error = error;
    notice('invocation', n);
  }
}

// serve is the loopback HTTP endpoint world-postgres's graphile-worker
// delivers to: POST /.well-known/workflow/v1/flow and /step.
function serve(handlers) {
  return new Promise((resolve, reject) => {
    const server = http.createServer(async (req, res) => {
      try {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        const url = new URL(/** @type {string} */ (req.url), `http://${req.headers.host ?? '127.0.0.1'}`);
        const kind = url.pathname.endsWith('/flow') ? 'flow' : url.pathname.endsWith('/step') ? 'step' : null;
        if (req.method !== 'POST' || !kind || !handlers[kind]) {
          res.writeHead(404).end();
          return;
        }
        const headers = new Headers();
        for (const [k, v] of Object.entries(req.headers)) {
          if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
        }
        const request = new Request(url, { method: 'POST', headers, body: Buffer.concat(chunks) });
        const response = await deliver(kind, handlers[kind], request);
        const body = Buffer.from(await response.arrayBuffer());
        res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
        res.end(body);
      } catch (err) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify(String(err?.message ?? err)));
      }
    });
    server.keepAliveTimeout = 5_000;
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

// listenLoopback listens on a free loopback port and answers every request
// 404: the runtime's port discovery finds it (see doOpen).
function listenLoopback() {
  return new Promise((resolve, reject) => {
    const server = http.createServer((_req, res) => res.writeHead(404).end());
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

async function open(req) {
  if (state.opened) throw new Error('open: the host already has a world (one per process)');
  state.opened = doOpen(req);
  return state.opened;
}

async function doOpen(req) {
  if (!req.workflows || !req.steps) throw new Error('open: workflows and steps bundle paths are required');
  const versions = {};
  for (const name of ['@workflow/core', '@workflow/world', '@workflow/world-local', '@workflow/world-postgres', '@workflow/world-vercel', '@workflow/builders', '@workflow/errors', 'workflow']) {
    const v = installedVersion(name, kit);
    if (v) versions[name] = v;
  }
  let world;
  let baseUrl;
  // pkg: the World package the host runs instead of the kit's (req.package:
  // its directory, as stormctl installed it or a local build).
  const pkg = req.package ? readPackage(req.package) : null;
  if (pkg) versions[pkg.name] = pkg.version;
  /** @type {string | null} */
  let queue = null;
  if (req.world === 'local') {
    if (!req.dataDir) throw new Error('open: world "local" needs dataDir');
    const mod = pkg ? await importPackage(pkg) : await importFromKit('@workflow/world-local');
    const createLocal = mod.createLocalWorld ?? mod.createWorld; // 5.0 renamed it createWorld
    watchLocalFiles(req.dataDir);
    world = createLocal({ dataDir: path.resolve(req.dataDir), recoverActiveRuns: false });
    queue = 'world-local (its own, in process)';
  } else if (req.world === 'postgres') {
    if (!req.url) throw new Error('open: world "postgres" needs url');
    const pkgDir = pkg ? pkg.dir : path.join(kit, 'node_modules', '@workflow', 'world-postgres');
    const pgReq = createRequire(path.join(pkgDir, 'package.json'));
    const pg = pgReq('pg');
    const { drizzle } = pgReq('drizzle-orm/node-postgres');
    const { migrate } = pgReq('drizzle-orm/node-postgres/migrator');
    watchPostgresInserts(pg, pgReq('cbor-x'));
    state.pool = new pg.Pool({ connectionString: req.url, max: req.poolSize || 64 });
    await migrate(drizzle(state.pool), {
      migrationsFolder: path.join(pkgDir, 'src', 'drizzle', 'migrations'),
      migrationsTable: 'workflow_migrations',
      migrationsSchema: 'workflow_drizzle',
    });
    // world-postgres builds a world-local internally (its createQueueHandler);
    // keep that one's data directory out of the kit.
    process.env.WORKFLOW_LOCAL_DATA_DIR ??= path.join(req.dataDir ?? fs.mkdtempSync(path.join(fs.realpathSync('/tmp'), 'stormctl-host-')), 'local');
    const mod = pkg ? await importPackage(pkg) : await importFromKit('@workflow/world-postgres');
    world = mod.createWorld({
      connectionString: req.url,
      pool: state.pool,
      ...(req.concurrency ? { queueConcurrency: req.concurrency } : {}),
    });
    queue = 'graphile-worker (its own, over HTTP to the host)';
  } else if (req.world === 'vercel') {
    if (!req.url || !req.project || !req.dataDir) throw new Error('open: world "vercel" needs url, project and dataDir');
    world = await composeVercel(req);
    queue = 'world-local (composed: @vercel/queue only runs on Vercel)';
  } else if (req.world === 'package') {
    if (!pkg || !req.dataDir) throw new Error('open: world "package" needs package and dataDir');
    ({ world, queue } = await composePackage(pkg, req));
  } else if (req.world === 'replay') {
    world = await composeReplay(req);
  } else {
    throw new Error(`open: unknown world ${JSON.stringify(req.world)} (want "local", "postgres", "vercel", "package" or "replay")`);
  }
  if (pkg && (req.world === 'local' || req.world === 'postgres')) versions[`@workflow/world-${req.world}`] = pkg.version;
  if (req.world !== 'replay') instrument(world);
  state.world = world;
  state.kind = req.world;
  // The world goes on globalThis before core (and the bundles' copies of it)
  // load: core's getWorld/getWorldHandlers read these symbols.
  globalThis[WORLD_CACHE] = world;
  globalThis[STUBBED_WORLD_CACHE] = world;

  const coreRuntime = await importFromKit('@workflow/core/runtime');
  const coreReq = createRequire(kitRequire.resolve('@workflow/core'));
  /** @type {number | null} */
  let spec = null;
  try {
    const w = await import(pathToFileURL(coreReq.resolve('@workflow/world')).href);
    spec = w.SPEC_VERSION_CURRENT ?? null;
  } catch {
    spec = null;
  }
  state.core = coreRuntime;
  try {
    devalue = await import(pathToFileURL(coreReq.resolve('devalue')).href);
  } catch {
    devalue = null;
  }

  // 4.x: the steps bundle exports POST = stepEntrypoint (a queue of its
  // own, "__wkf_step_"). 5.0 builders emit a combined bundle: the workflows
  // bundle inlines the step registrations and runs steps inside flow
  // deliveries; its steps bundle only registers steps (exports
  // __steps_registered) and is not loaded again.
  const flow = (await loadBundle(req.workflows)).POST;
  let step = null;
  const separateSteps = /\bstepEntrypoint\b/.test(fs.readFileSync(req.steps, 'utf8'));
  if (separateSteps) step = (await loadBundle(req.steps)).POST;
  if (typeof flow !== 'function' || (separateSteps && typeof step !== 'function')) {
    throw new Error('open: a bundle exports no POST handler (not a StandaloneBuilder bundle?)');
  }
  if (req.world === 'replay') {
    state.flow = flow; // replay requests call it directly; nothing is delivered by a queue
    state.workflowsBundle = req.workflows;
  } else if (req.world !== 'postgres') {
    world.registerHandler(FLOW_PREFIX, (r) => deliver('flow', flow, r));
    if (step) world.registerHandler(STEP_PREFIX, (r) => deliver('step', step, r));
    // The runtime runs inside an HTTP server in every deployment, and asks
    // for its port on every delivery (core's getPortLazy caches only a port
    // it found: in a process listening on none, each delivery took a
    // process.report.getReport() and a /proc scan, 2.5% of a host's CPU).
    // A loopback listener that answers nothing gives it the one it expects.
    state.server = await listenLoopback();
    await world.start?.();
  } else {
    state.server = await serve({ flow, step });
    baseUrl = `http://127.0.0.1:${state.server.address().port}`;
    process.env.WORKFLOW_LOCAL_BASE_URL = baseUrl;
    await world.start?.();
  }
  if (req.world !== 'replay') startHealth(req.healthMs || 500);
  const out = { versions, spec, worldSpec: world.specVersion ?? null, batchCreates: typeof world.events?.createBatch === 'function', node: process.version, world: req.world, stepQueue: Boolean(step), queue };
  if (baseUrl) out.baseUrl = baseUrl;
  return out;
}

// A stand-in OIDC token (as the sidecar's): unsigned, expiring in 2100.
// world-vercel asks @vercel/oidc for a token before every request; with
// none in the environment that package would look for a linked Vercel
// project and the user's credentials and call Vercel's API.
const standInToken = ['{"alg":"none","typ":"JWT"}', '{"sub":"stormctl","exp":4102444800}']
  .map((part) => Buffer.from(part).toString('base64url')).join('.') + '.';

// composeVercel is the world the runtime runs on for devkit-vercel:
// @workflow/world-vercel's storage (runs, steps, events, hooks: HTTP
// requests to stormctl's emulation of its backend at req.url, which the
// package reads from VERCEL_WORKFLOW_SERVER_URL and appends /api to, each
// carrying req.project as x-vercel-project-id) with world-local's in-process
// queue (queue, registerHandler, createQueueHandler, getDeploymentId), its
// streamer and its start/close, on req.dataDir. world-vercel's own queue is
// @vercel/queue, which only Vercel serves; so the deliveries are world-local's
// (each message in its own loop, as on devkit-local), and no encryption key
// is asked for (world-local has no getEncryptionKeyForRun). Both packages
// declare spec 3 in 4.x.
async function composeVercel(req) {
  const current = process.env.VERCEL_WORKFLOW_SERVER_URL;
  if (current && current !== req.url) throw new Error(`open: world-vercel's server is already ${current} in this host`);
  process.env.VERCEL_WORKFLOW_SERVER_URL = req.url;
  process.env.VERCEL_OIDC_TOKEN = standInToken;
  const localMod = await importFromKit('@workflow/world-local');
  const createLocal = localMod.createLocalWorld ?? localMod.createWorld;
  const local = createLocal({ dataDir: path.resolve(req.dataDir), recoverActiveRuns: false });
  const vercel = await importFromKit('@workflow/world-vercel');
  const storage = vercel.createStorage({ projectConfig: { projectId: req.project } });
  for (const k of ['runs', 'steps', 'events', 'hooks']) {
    if (!storage[k]) throw new Error(`open: @workflow/world-vercel's createStorage has no ${k}`);
  }
  return { ...local, runs: storage.runs, steps: storage.steps, events: storage.events, hooks: storage.hooks };
}

// STORAGE is what core 4.x calls of a world's storage (its dist, grepped):
// runs.get, steps.get, events.create and events.list, hooks.getByToken.
const STORAGE = [['runs', 'get'], ['steps', 'get'], ['events', 'create'], ['events', 'list'], ['hooks', 'getByToken']];

// composePackage is the world the runtime runs on for a third-party World
// package (req.world "package"): the package's world, created by its
// factory as the runtime does for WORKFLOW_TARGET_WORLD (its default export
// when a function, else createWorld, without arguments: it reads its
// configuration from the environment, stormctl's --world-env). A package
// whose queue delivers in process (registerHandler, as world-local's) runs
// whole, its own queue delivering. Otherwise (a queue that POSTs to an HTTP
// server, as the starter's and Redis's BullMQ do) it is composed as for
// devkit-vercel: the package's storage (runs, steps, events, hooks) with
// the kit's world-local in-process queue (queue, registerHandler,
// createQueueHandler, getDeploymentId), its streamer and start/close, on
// req.dataDir; the package's queue is never started. The composed world
// declares the package's specVersion, not world-local's (none: core then
// starts runs at spec 2, the baseline community worlds take).
async function composePackage(pkg, req) {
  const mod = await importPackage(pkg);
  const factory = [mod.default, mod.createWorld].find((f) => typeof f === 'function');
  if (!factory) throw new Error(`open: ${pkg.name}: no World factory: neither its default export nor createWorld is a function`);
  const world = await factory();
  const missing = STORAGE.filter(([o, f]) => typeof world?.[o]?.[f] !== 'function').map(([o, f]) => `${o}.${f}`);
  if (missing.length) throw new Error(`open: ${pkg.name}: its world has no ${missing.join(', ')}, which the runtime calls`);
  if (typeof world.registerHandler === 'function') return { world, queue: `${pkg.name}'s own (registerHandler, in process)` };
  const localMod = await importFromKit('@workflow/world-local');
  const createLocal = localMod.createLocalWorld ?? localMod.createWorld;
  const local = createLocal({ dataDir: path.resolve(req.dataDir), recoverActiveRuns: false });
  const composed = { ...local, runs: world.runs, steps: world.steps, events: world.events, hooks: world.hooks };
  delete composed.specVersion;
  if (world.specVersion !== undefined) composed.specVersion = world.specVersion;
  composed.close = async () => {
    await local.close?.();
    await world.close?.();
  };
  return { world: composed, queue: `world-local ${installedVersion('@workflow/world-local', kit)} (composed: the package's queue delivers over HTTP)` };
}

// ---------------------------------------------------------------- replay

// composeReplay is the world of a replay host: no store at all. Its
// events.create, events.list and queue are those of the replay in whose
// context (als) the runtime calls them (a ReplayWorld); world-local's
// createQueueHandler (on a data directory nothing is written to: the world
// is never started) parses the deliveries the replay op makes; every other
// storage call is refused, which ends the replay there.
const realDateNow = Date.now;

async function composeReplay(req) {
  const localMod = await importFromKit('@workflow/world-local');
  const createLocal = localMod.createLocalWorld ?? localMod.createWorld;
  const dir = req.dataDir ?? fs.mkdtempSync(path.join(fs.realpathSync('/tmp'), 'stormctl-replay-'));
  const local = createLocal({ dataDir: path.resolve(dir), recoverActiveRuns: false });
  const coreReq = createRequire(kitRequire.resolve('@workflow/core'));
  const worldPkg = await import(pathToFileURL(coreReq.resolve('@workflow/world')).href);
  state.schemas = { event: worldPkg.EventSchema, run: worldPkg.WorkflowRunSchema, step: worldPkg.StepSchema };
  const current = () => {
    const r = als.getStore()?.replay;
    if (!r) throw new Error('replay host: a world call outside any replay');
    return r;
  };
  // Inside a replay the runtime's clock is the replay's (the end of the
  // operation it served last): whether a wait is due is decided as it was.
  Date.now = () => {
    const r = als.getStore()?.replay;
    return r ? r.clock : realDateNow();
  };
  const refused = (name) => async () => current().refuse(name);
  const storage = (name, methods) => Object.fromEntries(methods.map((m) => [m, refused(`${name}.${m}`)]));
  return {
    ...local,
    events: {
      create: (...a) => current().create(...a),
      list: (...a) => current().list(...a),
      ...storage('events', ['get', 'listByCorrelationId']),
      // Offered only when the runs replayed had it (open's batch): core
      // 5.0 batches a clean fan-out only through a world that has it, and
      // its telemetry wrapper copies the world's methods once, outside
      // any replay, so whether it is there is the host's, not a replay's.
      ...(req.batch ? { createBatch: (/** @type {any[]} */ ...a) => current().createBatch(...a) } : {}),
    },
    // runs.get of the replayed run: the run entity, running since the
    // run started (a delivery that ran a step reads it before it goes on;
    // the recording does not hold the store's answer, which was that one
    // while the run ran).
    runs: { ...storage('runs', ['list', 'create', 'update', 'cancel', 'pause', 'resume']), get: (...a) => current().getRun(...a) },
    steps: storage('steps', ['get', 'list', 'create', 'update']),
    hooks: storage('hooks', ['get', 'getByToken', 'list', 'create', 'dispose']),
    queue: (...a) => current().queue(...a),
    writeToStream: refused('writeToStream'),
    closeStream: refused('closeStream'),
    readFromStream: refused('readFromStream'),
    listStreamsByRunId: refused('listStreamsByRunId'),
    start: undefined,
  };
}

// reviveBytes turns world-local's file encoding of a byte array back into one.
function reviveBytes(_key, value) {
  if (value !== null && typeof value === 'object' && value.__type === 'Uint8Array' && typeof value.data === 'string') {
    return new Uint8Array(Buffer.from(value.data, 'base64'));
  }
  return value;
}

// packageEvent is an event as the package lists it, from its recorded JSON.
function packageEvent(raw) {
  return state.schemas.event.parse(JSON.parse(JSON.stringify(raw), reviveBytes));
}

// worldError is a recorded error of the store, as the package threw it:
// core tells them apart by name (EntityConflictError.is, ...).
function worldError(e) {
  /** @type {Error & {status?: number}} */
  const err = new Error(e.message ?? '');
  err.name = e.name || 'Error';
  if (e.status) err.status = e.status;
  return err;
}

// ReplayWorld serves one recorded invocation's operations, in order, to
// the runtime replaying it: each events.list gets the page the invocation
// read (from the same cursor, or the replay left its record), each
// events.create is matched with the next recorded create of the same type
// and correlation id (creates the runtime issues together may be recorded
// in another order) and answered as the store answered it, with the
// recorded event (the id the store minted) or the recorded error; queue
// messages go nowhere. Its clock (Date.now inside the replay) is the end
// of the operation served last, or the start of the wait_completed the
// record shows the runtime writing next, before its next read. The first call that is not the record's
// next ends the replay there: it is answered with an error, as is every
// call after it.
// STEP_STATUS is a step's status after each step event, as the store
// keeps it.
const STEP_STATUS = {
  step_created: 'pending',
  step_started: 'running',
  step_retrying: 'pending',
  step_completed: 'completed',
  step_failed: 'failed',
};

class ReplayWorld {
  constructor(req) {
    this.ops = req.ops;
    this.served = new Array(req.ops.length).fill(false);
    this.next = 0;
    this.clock = req.clock;
    this.runId = req.runId;
    this.run = req.run;
    this.done = [];
    this.queued = [];
    this.divergence = null;
    this.failed = null;
    this.deviation = null;
    // scratch: past its operations the replay writes into a scratch log
    // (creates answered with no event, lists with an empty page) instead
    // of leaving its record: a prefix replay, which has no record of
    // what the invocation wrote.
    this.scratch = Boolean(req.scratch);
    // tail is the scratch log of a run of slot ids (spec 6 and later):
    // what the replay wrote past its record, each event minted at the
    // next slot, which its later lists return, as a store would. Core 5.0
    // reads back what it wrote (an inline step's completion) before it
    // goes on; a log that forgot its writes kept it polling. Runs of the
    // legacy contract keep the empty scratch log they always had.
    this.tail = [];
  }

  // slotted reports whether the run's log has slot ids (spec 6 and
  // later), as its run_created's stamp says.
  slotted() {
    return (this.run?.created?.specVersion ?? 0) >= 6;
  }

  // lastSlot is the highest slot of the log as served so far and the
  // scratch log, 0 when none is a slot id.
  lastSlot() {
    let last = 0;
    const seen = (/** @type {any} */ e) => {
      const m = /^(?:evnt_|wevt_)?(\d{26})$/.exec(e?.eventId ?? '');
      if (m) last = Math.max(last, Number(m[1]));
    };
    for (let i = 0; i < this.ops.length; i++) {
      if (this.served[i] && this.ops[i].kind === 'list') (this.ops[i].events ?? []).forEach(seen);
    }
    this.tail.forEach(seen);
    return last;
  }

  // scratchEvent mints a scratch write at the next slot and keeps it.
  scratchEvent(type, corr, data) {
    const event = {
      runId: this.runId,
      eventId: 'evnt_' + String(this.lastSlot() + 1).padStart(26, '0'),
      eventType: type,
      correlationId: corr || undefined,
      eventData: data?.eventData,
      specVersion: data?.specVersion ?? this.run.created.specVersion,
      createdAt: new Date(this.clock),
    };
    this.tail.push(event);
    return event;
  }

  // skip moves next past the operations already served.
  skip() {
    while (this.next < this.ops.length && this.served[this.next]) this.next++;
  }

  describe(op) {
    if (!op) return '';
    if (op.kind === 'batch') return `createBatch [${(op.items ?? []).map((it) => this.describe(it)).join(', ')}]${op.error ? ` (${op.error.name})` : ''}`;
    if (op.kind === 'list') return `list after ${op.after || 'start'}${op.error ? ` (${op.error.name})` : ''}`;
    return `create ${op.eventType}${op.correlationId ? ' ' + op.correlationId : ''}${op.error ? ` (${op.error.name})` : ''}`;
  }

  deviate(replayed) {
    if (!this.deviation) {
      const op = this.ops[this.next];
      this.deviation = { op: this.next, recorded: this.describe(op), replayed };
    }
    const err = new Error(`replay: the invocation left its recorded operations (${replayed})`);
    err.name = 'ReplayDeviation';
    throw err;
  }

  // take serves operation i. The clock moves to its end, where the
  // runtime's next decisions were made at the earliest; when the record
  // shows the runtime completing a wait before its next read, on to the
  // start of that create: the wait was due by then, and a decision made
  // late in the gap (a busy host) replayed at the gap's beginning would
  // find it not yet due. Moving on to the next call's start whatever it is
  // would, the other way, find due a wait the runtime had found not due.
  take(i) {
    const op = this.ops[i];
    this.served[i] = true;
    this.skip();
    if (op.end > this.clock) this.clock = op.end;
    for (let k = this.next; k < this.ops.length && this.ops[k].kind !== 'list'; k++) {
      const next = this.ops[k];
      if (!this.served[k] && next.eventType === 'wait_completed') {
        if (next.start > this.clock) this.clock = next.start;
        break;
      }
    }
    return op;
  }

  async refuse(name) {
    return this.deviate(name + ' (not served by a replay)');
  }

  async list(params) {
    const cursor = params?.pagination?.cursor ?? '';
    const asked = `list after ${cursor || 'start'}`;
    if (this.deviation) return this.deviate(asked);
    this.skip();
    const op = this.ops[this.next];
    if (this.scratch && (!op || op.kind !== 'list')) {
      this.done.push({ op: 'list', after: cursor, scratch: true });
      const from = this.tail.findIndex((e) => e.eventId === cursor);
      const data = from >= 0 ? this.tail.slice(from + 1) : this.tail.filter((e) => e.eventId > cursor);
      const last = data[data.length - 1];
      return { data, cursor: last ? last.eventId : (cursor || null), hasMore: false };
    }
    if (!op || op.kind !== 'list' || (op.after ?? '') !== cursor) return this.deviate(asked);
    this.take(this.next);
    this.done.push({ op: 'list', after: cursor });
    if (op.error) throw worldError(op.error);
    const data = (op.events ?? []).map(packageEvent);
    const last = data[data.length - 1];
    return { data, cursor: last ? last.eventId : (cursor || null), hasMore: Boolean(op.hasMore) };
  }

  async create(runId, data, params) {
    const type = data?.eventType;
    const corr = data?.correlationId ?? '';
    const asked = `create ${type}${corr ? ' ' + corr : ''}`;
    if (this.deviation) return this.deviate(asked);
    this.skip();
    // The recorded create of this type and correlation id among the
    // unserved creates from next on, before the next list.
    let at = -1;
    for (let i = this.next; i < this.ops.length && this.ops[i].kind !== 'list'; i++) {
      const op = this.ops[i];
      if (!this.served[i] && op.eventType === type && (op.correlationId ?? '') === corr) {
        at = i;
        break;
      }
    }
    if (at < 0 && !this.scratch) return this.deviate(asked);
    if (type === 'run_failed') {
      this.failed = { code: data?.eventData?.errorCode ?? null, message: errorMessageOf(data?.eventData?.error) };
      if (this.failed.code === 'CORRUPTED_EVENT_LOG' && !this.divergence) {
        this.divergence = { message: this.failed.message, eventId: null, terminal: true };
      }
    }
    if (at < 0) {
      const step = STEP_STATUS[type] ? this.stepEntity(type, corr, data?.eventData) : undefined;
      this.done.push({ op: 'create', at: -1, eventType: type, correlationId: corr, eventData: data?.eventData ?? null, scratch: true });
      if (!this.slotted()) return {};
      const out = { event: this.scratchEvent(type, corr, data) };
      if (step) out.step = step;
      return out;
    }
    const op = this.take(at);
    const step = STEP_STATUS[type] && !op.error ? this.stepEntity(type, corr, data?.eventData, op.stepCreated) : undefined;
    this.done.push({ op: 'create', at, eventType: type, correlationId: corr, eventData: data?.eventData ?? null });
    if (op.error) throw worldError(op.error);
    const out = { event: op.event ? packageEvent(op.event) : undefined };
    if (type === 'run_started') out.run = this.runEntity(op.startedAt);
    if (step) out.step = step;
    if (op.snapshot) {
      out.events = op.snapshot.events.map(packageEvent);
      const last = out.events[out.events.length - 1];
      out.cursor = last ? last.eventId : null;
      out.hasMore = Boolean(op.snapshot.hasMore);
    }
    return out;
  }

  // createBatch serves one events.createBatch call: the first unserved
  // recorded batch before the next list whose events are the ones asked
  // for (type and correlation id, in request order: core commits a
  // fan-out's chunks concurrently, so they may be recorded in another
  // order), each answered as the store answered it: status 200 with the
  // recorded event (and a step event's step), or the status its refusal
  // had (409 for a conflict). A scratch replay past its record writes
  // every event into the scratch log.
  async createBatch(runId, events, params) {
    const asked = `createBatch [${(events ?? []).map((b) => `create ${b?.event?.eventType}${b?.event?.correlationId ? ' ' + b.event.correlationId : ''}`).join(', ')}]`;
    if (this.deviation) return this.deviate(asked);
    this.skip();
    const want = (events ?? []).map((b) => [b?.event?.eventType, b?.event?.correlationId ?? '']);
    let at = -1;
    for (let i = this.next; i < this.ops.length && this.ops[i].kind !== 'list'; i++) {
      const op = this.ops[i];
      const items = op.items ?? [];
      if (this.served[i] || op.kind !== 'batch' || items.length !== want.length) continue;
      if (items.every((it, j) => it.eventType === want[j][0] && (it.correlationId ?? '') === want[j][1])) {
        at = i;
        break;
      }
    }
    if (at < 0 && !this.scratch) return this.deviate(asked);
    if (at < 0) {
      const results = [];
      for (const [j, b] of (events ?? []).entries()) {
        const [type, corr] = want[j];
        const step = STEP_STATUS[type] ? this.stepEntity(type, corr, b?.event?.eventData) : undefined;
        this.done.push({ op: 'create', at: -1, item: j, eventType: type, correlationId: corr, eventData: b?.event?.eventData ?? null, scratch: true });
        const out = { status: 200, event: this.scratchEvent(type, corr, b?.event) };
        if (step) out.step = step;
        results.push(out);
      }
      return { results };
    }
    const op = this.take(at);
    if (op.error) {
      for (const [j, [type, corr]] of want.entries()) {
        this.done.push({ op: 'create', at, item: j, eventType: type, correlationId: corr, eventData: events[j]?.event?.eventData ?? null });
      }
      throw worldError(op.error);
    }
    const results = [];
    for (const [j, item] of op.items.entries()) {
      const [type, corr] = want[j];
      const data = events[j]?.event?.eventData;
      const step = STEP_STATUS[type] && !item.error ? this.stepEntity(type, corr, data, item.stepCreated) : undefined;
      this.done.push({ op: 'create', at, item: j, eventType: type, correlationId: corr, eventData: data ?? null });
      if (item.error) {
        // The refusal as recorded: its status, and its error code where
        // the recorded message leads with one ("invalid_request: ...").
        const conflict = item.error.name === 'EntityConflictError';
        const status = item.error.status || (conflict ? 409 : 400);
        const m = /^([a-z_]+): ([\s\S]*)$/.exec(item.error.message ?? '');
        const code = conflict ? 'conflict' : m ? m[1] : item.error.name;
        results.push({ status, error: code, message: m && !conflict ? m[2] : item.error.message ?? '' });
        continue;
      }
      const out = { status: 200, event: item.event ? packageEvent(item.event) : undefined };
      if (step) out.step = step;
      results.push(out);
    }
    return { results };
  }

  // stepEntity is the step as the store answers a step event's create
  // with it (core 5.0 runs a step inline from a step_started's answer and
  // reads its stepId, input and attempt there): its name and input from
  // its step_created (this create's, the log's as served so far, or the
  // run's, stepCreated, the recorded op's copy), its
  // status after this event, its attempt the step_started events of it
  // the log and this replay's creates hold, this one included.
  stepEntity(type, corr, eventData, stepCreated) {
    let created = type === 'step_created' ? eventData ?? {} : null;
    let attempt = type === 'step_started' ? 1 : 0;
    for (let i = 0; i < this.ops.length; i++) {
      const op = this.ops[i];
      if (!this.served[i] || op.kind !== 'list') continue;
      for (const raw of op.events ?? []) {
        if (raw.correlationId !== corr) continue;
        if (raw.eventType === 'step_started') attempt++;
        if (raw.eventType === 'step_created' && !created) created = packageEvent(raw).eventData ?? {};
      }
    }
    for (const d of this.done) {
      if (d.op !== 'create' || d.correlationId !== corr) continue;
      if (d.eventType === 'step_started') attempt++;
      if (d.eventType === 'step_created' && !created) created = d.eventData ?? {};
    }
    // A delivery that runs a step reads no log before it claims the step:
    // its step_created is the run's (the op carries the log's copy).
    if (!created && stepCreated) created = packageEvent(stepCreated).eventData ?? {};
    const now = new Date(this.clock);
    const step = {
      runId: this.runId,
      stepId: corr,
      stepName: eventData?.stepName ?? created?.stepName ?? '',
      status: STEP_STATUS[type],
      // A lazy start (5.0: a step_started that creates its step) carries
      // the input itself.
      input: created?.input ?? eventData?.input,
      attempt: Math.max(attempt, type === 'step_created' ? 0 : 1),
      startedAt: attempt > 0 ? now : undefined,
      createdAt: now,
      updatedAt: now,
      specVersion: this.run.created.specVersion,
    };
    // Parsed as the package's own answer is (dates coerced); a shape the
    // package's schema refuses is answered as it is rather than failing
    // the replay on stormctl's guess.
    const parsed = state.schemas.step?.safeParse?.(step);
    return parsed?.success ? parsed.data : step;
  }

  // getRun answers runs.get of the replayed run with its entity, running
  // since it started (run.startedAt, else when it was created); another
  // run's is refused.
  async getRun(runId) {
    if (runId !== this.runId || this.deviation) return this.refuse('runs.get');
    this.done.push({ op: 'get', runId });
    return this.runEntity(this.run.startedAt ?? new Date(this.run.created.createdAt).getTime());
  }

  // runEntity is the run as a run_started answered it: the run_created's
  // fields, running since startedAt.
  runEntity(startedAt) {
    const c = this.run.created;
    const d = JSON.parse(JSON.stringify(c.eventData ?? {}), reviveBytes);
    return state.schemas.run.parse({
      runId: this.runId,
      deploymentId: d.deploymentId,
      workflowName: d.workflowName,
      specVersion: c.specVersion,
      executionContext: d.executionContext,
      input: d.input,
      status: 'running',
      startedAt: new Date(startedAt),
      createdAt: new Date(c.createdAt),
      updatedAt: new Date(startedAt),
    });
  }

  async queue(queueName, message) {
    this.queued.push({ queue: queueName, stepId: message?.stepId ?? null, replayDivergence: message?.replayDivergence ?? null });
    if (message?.replayDivergence && !this.divergence) {
      this.divergence = { message: als.getStore()?.divergenceMessage ?? null, eventId: message.replayDivergence.eventId ?? null };
    }
    return { messageId: `msg_replay${this.queued.length}` };
  }
}

// replay re-executes one recorded flow invocation of a run through the
// runtime's flow handler, against a ReplayWorld of its operations:
//   replay {runId, workflowName, ops, run: {created}, clock, recovery?, scratch?, delivery?}
//     -> {status, done, deviation, divergence, failed, queued}
// ops: the invocation's recorded operations in order, each
//   {kind: "list", after, events, hasMore, start?, end, error?} or
//   {kind: "create", eventType, correlationId, event, startedAt?, snapshot?, start?, end, error?} or
//   {kind: "batch", items: [{eventType, correlationId, event?, error?}], start?, end, error?}
// (events as the package listed them; error {name, message, status}).
// run.created: the run's run_created event; clock: the replay's Date.now
// at its start (ms); recovery: the replayDivergence the delivery carries;
// scratch: calls past the operations go to a scratch log (a prefix replay);
// delivery {body: {data (base64), contentType}, messageId, attempt}: the
// recorded delivery, sent again as it was (else {runId, requestedAt} and
// recovery). A batch op (a host opened with batch: the world has events.createBatch)
// is answered event by event; done lists each, with its index as item.
async function replay(req) {
  await ready();
  if (state.kind !== 'replay') throw new Error('replay: this host runs a world (open it with world "replay")');
  if (!req.runId || !req.workflowName || !Array.isArray(req.ops) || !req.run?.created) {
    throw new Error('replay: runId, workflowName, ops and run.created are required');
  }
  const r = new ReplayWorld(req);
  // The delivery as recorded (body, messageId, attempt), else a plain
  // one: {runId, requestedAt} and the recovery it carried.
  const seq = ++state.invSeq;
  let sent, contentType = 'application/json';
  if (req.delivery?.body?.data) {
    sent = Buffer.from(req.delivery.body.data, 'base64');
    contentType = req.delivery.body.contentType || contentType;
  } else {
    /** @type {Record<string, any>} */
    const message = { runId: req.runId, requestedAt: new Date(req.clock).toISOString() };
    if (req.recovery) message.replayDivergence = req.recovery;
    sent = JSON.stringify(message);
  }
  const request = new Request('http://127.0.0.1/.well-known/workflow/v1/flow', {
    method: 'POST',
    headers: {
      'content-type': contentType,
      'x-vqs-queue-name': FLOW_PREFIX + req.workflowName,
      'x-vqs-message-id': req.delivery?.messageId || `msg_replay_${seq}`,
      'x-vqs-message-attempt': String(req.delivery?.attempt || 1),
    },
    body: sent,
  });
  const res = await als.run({ actor: `replay-${seq}`, replay: r }, () => state.flow(request));
  const body = await res.text().catch(() => '');
  return {
    status: res.status,
    body: res.ok ? undefined : body.slice(0, 2000),
    done: r.done,
    deviation: r.deviation,
    divergence: r.divergence,
    failed: r.failed,
    queued: r.queued,
  };
}

// workflowCode is the workflow code the workflows bundle hands core
// (its workflowEntrypoint(workflowCode): the scenario compiled for core's
// VM, a script string): what a reproduction outside stormctl runs through
// the @workflow/core it installs.
//   workflowCode {} -> {code}
async function workflowCode() {
  await ready();
  if (!state.workflowsBundle) throw new Error('workflowCode: this host is not a replay host');
  const text = fs.readFileSync(state.workflowsBundle, 'utf8');
  const start = text.indexOf('var workflowCode = `');
  if (start < 0) throw new Error(`workflowCode: ${state.workflowsBundle} holds no "var workflowCode = \`" (another builder's bundle?)`);
  let i = start + 'var workflowCode = `'.length;
  const from = i;
  for (; i < text.length && text[i] !== '`'; i++) {
    if (text[i] === '\\') {
      i++; // an escape: the next character is the literal's
    } else if (text[i] === '$' && text[i + 1] === '{') {
      throw new Error('workflowCode: the template literal interpolates');
    }
  }
  if (i >= text.length) throw new Error('workflowCode: the template literal does not end');
  const literal = text.slice(from, i);
  // A template literal without interpolations: its escapes, as JS reads them.
  const code = new Function('return `' + literal + '`')();
  return { code };
}

async function ready() {
  if (!state.opened) throw new Error('the host has no world: send open first');
  await state.opened;
  if (state.closing) throw new Error('the host is closing');
}

// ---------------------------------------------------------------- ops

async function start(req) {
  await ready();
  if (!req.workflowId) throw new Error('start: workflowId is required');
  const run = await als.run({ actor: 'starter' }, () => state.core.start({ workflowId: req.workflowId }, [req.input]));
  statsOf(run.runId);
  return { runId: run.runId };
}

async function resumeHook(req) {
  await ready();
  const hook = await als.run({ actor: 'hook-sender' }, () => state.core.resumeHook(req.token, req.payload));
  return { runId: hook?.runId ?? null, hookId: hook?.hookId ?? null };
}

async function events(req) {
  await ready();
  if (!req.runId) throw new Error('events: runId is required');
  return als.run({ actor: req.actor || 'runtime' }, async () => {
    const all = [];
    const seen = new Set();
    let cursor;
    let pages = 0;
    for (;;) {
      const pagination = { sortOrder: 'asc' };
      if (cursor) pagination.cursor = cursor;
      if (req.limit) pagination.limit = req.limit;
      const page = await state.world.events.list({ runId: req.runId, pagination, resolveData: 'all' });
      pages++;
      all.push(...(page.data ?? []));
      if (!page.hasMore) break;
      if (!page.cursor || seen.has(page.cursor)) {
        throw new Error(`events: the package's list of ${req.runId} says hasMore without a new cursor (${page.cursor})`);
      }
      seen.add(page.cursor);
      cursor = page.cursor;
    }
    if (Array.isArray(req.types)) {
      // A scenario's driver reads a few types (hooks' tokens, waits'
      // times), some polling every 250 ms: only those go back.
      const types = new Set(req.types);
      return { events: all.filter((e) => types.has(e?.eventType)), pages };
    }
    return { events: all, pages };
  });
}

async function status(req) {
  await ready();
  // The counts are the host's own: a world that cannot answer runs.get
  // (busy, or the run's entity unreadable) does not lose them.
  let run = {};
  let runError;
  try {
    run = await state.world.runs.get(req.runId, { resolveData: 'none' });
  } catch (err) {
    runError = errorOf(err);
  }
  const s = statsOf(req.runId);
  const out = {
    status: run.status ?? null,
    invocations: s.invocations,
    steps: s.steps,
    maxConcurrent: s.maxConcurrent,
    inflight: s.inflight + s.inflightSteps,
    redeliveries: s.redeliveries,
    retries: s.retries,
    recoveries: s.recoveries,
    recoveryQueued: s.recoveryQueued,
    divergences: s.divergences,
    skipped: s.skipped,
    messages: s.messages,
  };
  if (run.error) {
    out.error = run.error;
    out.errorMessage = errorMessageOf(run.error);
  }
  if (run.errorCode) out.errorCode = run.errorCode;
  if (runError) out.runError = runError;
  return out;
}

// output hydrates a completed run's return value with core's own Run
// (getRun(runId).returnValue): the ledger the Go scenario's Check reads. The
// log's run_completed carries it serialized (eventData.output: a
// Uint8Array, "devl" + devalue text).
async function output(req) {
  await ready();
  const run = await state.world.runs.get(req.runId, { resolveData: 'none' });
  if (run.status !== 'completed') return { status: run.status };
  const value = await als.run({ actor: req.actor || 'runtime' }, () => state.core.getRun(req.runId).returnValue);
  return { status: run.status, output: value };
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

async function cancel(req) {
  await ready();
  const s = statsOf(req.runId);
  s.cancelled = true;
  let run = await state.world.runs.get(req.runId, { resolveData: 'none' });
  if (!TERMINAL.has(run.status)) {
    try {
      await als.run({ actor: req.actor || 'runtime' }, () => state.core.cancelRun(state.world, req.runId));
    } catch (err) {
      // The run may have ended meanwhile; anything else is an error.
      run = await state.world.runs.get(req.runId, { resolveData: 'none' });
      if (!TERMINAL.has(run.status)) throw err;
    }
    run = await state.world.runs.get(req.runId, { resolveData: 'none' });
  }
  if (s.inflight + s.inflightSteps > 0) {
    await /** @type {Promise<void>} */ (new Promise((resolve) => {
      const t = setTimeout(resolve, CANCEL_DRAIN_MS);
      s.drained.push(() => {
        clearTimeout(t);
        resolve();
      });
    }));
  }
  return { status: run.status, inflight: s.inflight + s.inflightSteps };
}

async function shutdown() {
  if (state.closing) return state.closing;
  state.closing = (async () => {
    if (state.opened) await state.opened.catch(() => {});
    const steps = [
      async () => state.world?.close?.(),
      async () => state.server && /** @type {Promise<void>} */ (new Promise((r) => {
        state.server.close(() => r());
        state.server.closeAllConnections?.();
      })),
      async () => state.pool?.end(),
    ];
    for (const step of steps) {
      try {
        await step();
      } catch (err) {
        process.stderr.write(`host: close: ${err?.stack ?? err}\n`);
      }
    }
  })();
  return state.closing;
}

async function close() {
  await shutdown();
  return {};
}

const ops = { open, start, resumeHook, events, status, output, cancel, close, replay, workflowCode };

// ---------------------------------------------------------------- main loop

serveRequests({
  name: 'host',
  ops,
  send,
  run: (call) => als.run({ actor: 'runtime' }, call),
  onClose: async () => {
    const cap = setTimeout(() => {
      process.stderr.write(`host: closing took over ${CLOSE_CAP_MS} ms; exiting anyway\n`);
      process.exit(0);
    }, CLOSE_CAP_MS);
    cap.unref();
    await shutdown();
    answers.end(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  },
});
process.on('unhandledRejection', (/** @type {any} */ err) => {
  process.stderr.write(`host: unhandled rejection: ${err?.stack ?? err}\n`);
});
