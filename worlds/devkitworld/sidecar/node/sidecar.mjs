// stormctl's devkit sidecar: runs the Workflow DevKit's own storage packages
// (@workflow/world-local, @workflow/world-postgres) for stormctl's engine,
// which drives them through the packages' events.create and events.list.
//
// Protocol: JSON lines, requests on stdin and answers on file descriptor 3
// (a pipe written asynchronously: Node writes stdout to a pipe
// synchronously, which would stall every request behind the reader). A
// request is
//   {"id": N, "op": OP, ...arguments}
// and its answer, in any order (requests run concurrently), starts with
// its id:
//   {"id": N, "result": ...}  or  {"id": N, "error": {"name", "message", "code", "status"}}
// Ops:
//   hello                                  -> {versions: {package: version}, node, specs: {kind: spec}}
//                                             (spec: {package, version, world, specVersion}: the
//                                             @workflow/world the kind's package resolves, and the
//                                             SPEC_VERSION_CURRENT it exports)
//   open   {kind: "local", dataDir}        -> {handle}
//   open   {kind: "postgres", url}         -> {handle}  (migrates the database first)
//   open   {kind: "vercel", url, project}  -> {handle}  (world-vercel's storage, its server url
//                                             and project id: see openVercel)
//   open   {kind: "package"}               -> {handle}  (a third-party World package, created
//                                             by its factory: see openPackage)
//   create {handle, runId, event, delayMs} -> {event, window}
//   list   {handle, runId, after, limit}   -> {events: [event...], hasMore}
//   cancel {target}                        -> {}  (aborts request target's open window: it fails unwritten)
//   close  {handle}                        -> {}
// Events go to and come from the packages as they are; "after" is an event
// id (world-local's own cursors are kept here, per event id).
// delayMs is the write's mint-to-commit window: it is spent after the
// package minted the event's id and before the event becomes visible (the
// temp file of world-local's event file is written after it, then hard-linked
// into place; world-postgres's INSERT into workflow_events runs after it).
// A create's window says where the window was spent, when delayMs asked for
// one: {asked: true, spent: HOOK} with HOOK "events-file" (world-local's
// event file) or "workflow_events-insert" (world-postgres's INSERT), or
// spent null when neither hook found its point in the package's write (a
// package version that writes otherwise); the Go side counts them per event
// type. Standard output and error carry diagnostics only. The process exits
// when stdin ends.
//
// Arguments: --local DIR --postgres DIR [--vercel DIR] [--package DIR], the
// packages' directories (each holding package.json and its built entry).
// A third-party package reads its configuration from this process's
// environment (stormctl --world-env).

import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

const dirs = parseArgs(process.argv.slice(2));
const windows = new AsyncLocalStorage();
const inflight = new Map(); // request id -> AbortController of its window
const handles = new Map();
let nextHandle = 1;

// parseArgs reads --kind DIR pairs; each DIR is taken by its real path, from
// which its own dependencies resolve (a linked package's are beside its
// target, not its link).
function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    const dir = path.resolve(argv[i + 1]);
    out[key] = fs.existsSync(dir) ? fs.realpathSync(dir) : dir;
  }
  return out;
}

// spendWindow waits out the current request's window once, if it has one,
// and records the hook that found its point.
async function spendWindow(hook) {
  const w = windows.getStore();
  if (!w || w.spent || !(w.delayMs > 0)) return;
  w.spent = hook;
  await sleep(w.delayMs, undefined, { signal: w.signal });
}

// world-local publishes an event by writing <dataDir>/events/<run>-<id>.json.tmp.<ulid>
// and hard-linking it into place; the window goes before that write.
const writeFile = fsp.writeFile;
fsp.writeFile = async function (file, ...rest) {
  const w = windows.getStore();
  if (w?.eventsDir && typeof file === 'string' && file.startsWith(w.eventsDir)) {
    await spendWindow('events-file');
  }
  return writeFile.call(this, file, ...rest);
};
syncBuiltinESMExports();

const loaded = new Map();

// load imports a package from its directory, with the modules it depends on
// resolved from there.
async function load(kind) {
  if (loaded.has(kind)) return loaded.get(kind);
  const dir = dirs[kind];
  if (!dir) throw new Error(`no package directory for ${kind}`);
  const pkg = JSON.parse(await fsp.readFile(path.join(dir, 'package.json'), 'utf8'));
  const req = createRequire(path.join(dir, 'package.json'));
  const mod = await import(pathToFileURL(path.join(dir, entryOf(pkg))).href);
  const worldEntry = resolveFrom(dir, '@workflow/world');
  const world = await import(pathToFileURL(worldEntry).href);
  if (typeof world.CreateEventSchema?.parse !== 'function') {
    throw new Error(`${pkg.name}: its @workflow/world (${worldEntry}) exports no CreateEventSchema`);
  }
  const out = {
    dir, pkg, req, mod,
    CreateEventSchema: world.CreateEventSchema,
    specVersion: world.SPEC_VERSION_CURRENT,
    worldVersion: versionOf(worldEntry),
  };
  if (kind === 'postgres') {
    out.pg = req('pg');
    patchPostgres(out.pg);
    out.drizzle = req('drizzle-orm/node-postgres');
    out.migrator = req('drizzle-orm/node-postgres/migrator');
  }
  loaded.set(kind, out);
  return out;
}

// entryOf is the module a package's root export names: its exports' "."
// (import or default condition, or a string), else its main.
function entryOf(pkg) {
  let e = pkg.exports;
  if (e && typeof e === 'object' && '.' in e) e = e['.'];
  for (let i = 0; e && typeof e === 'object' && i < 4; i++) e = e.import ?? e.default ?? e.node;
  return typeof e === 'string' ? e : (pkg.main ?? 'index.js');
}

// resolveFrom finds module name's entry as seen from dir: the nearest
// node_modules/name up from dir, then its root export. (createRequire's
// resolve needs a "require" condition, which ESM-only packages lack.)
function resolveFrom(dir, name) {
  for (let d = dir; ; d = path.dirname(d)) {
    const candidate = path.join(d, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) {
      const pkg = JSON.parse(fs.readFileSync(path.join(candidate, 'package.json'), 'utf8'));
      return path.join(fs.realpathSync(candidate), entryOf(pkg));
    }
    if (path.dirname(d) === d) throw new Error(`cannot find ${name} from ${dir}`);
  }
}

// versionOf is the version in the package.json above a module's entry.
function versionOf(entry) {
  for (let d = path.dirname(entry); path.dirname(d) !== d; d = path.dirname(d)) {
    const f = path.join(d, 'package.json');
    if (fs.existsSync(f)) {
      const pkg = JSON.parse(fs.readFileSync(f, 'utf8'));
      if (pkg.name && pkg.version) return pkg.version;
    }
  }
  return '';
}

// world-postgres mints an event's id when it builds its INSERT; the window
// goes before the statement runs (inside the package's transaction where it
// has one).
function patchPostgres(pg) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, values, callback) {
    const w = windows.getStore();
    const text = typeof config === 'string' ? config : config?.text;
    if (!w || w.spent || !(w.delayMs > 0) || typeof text !== 'string' ||
      !/^insert into "workflow"\."workflow_events"/i.test(text)) {
      return query.call(this, config, values, callback);
    }
    const cb = typeof values === 'function' ? values : callback;
    const run = spendWindow('workflow_events-insert').then(() => query.call(this, config, values, callback));
    if (cb) {
      run.catch((err) => cb(err));
      return undefined;
    }
    return run;
  };
}

async function open(req) {
  const pkg = await load(req.kind);
  let world;
  let stop = async () => {};
  let eventsDir;
  if (req.kind === 'local') {
    world = pkg.mod.createLocalWorld({ dataDir: req.dataDir, recoverActiveRuns: false });
    await world.start();
    eventsDir = path.join(path.resolve(req.dataDir), 'events') + path.sep;
    stop = () => world.close();
  } else if (req.kind === 'postgres') {
    const pool = new pkg.pg.Pool({ connectionString: req.url, max: req.poolSize || 20 });
    const migrations = path.join(pkg.dir, 'src', 'drizzle', 'migrations');
    await pkg.migrator.migrate(pkg.drizzle.drizzle(pool), {
      migrationsFolder: migrations,
      migrationsTable: 'workflow_migrations',
      migrationsSchema: 'workflow_drizzle',
    });
    world = pkg.mod.createWorld({ connectionString: req.url, pool });
    stop = async () => {
      await world.close?.();
      await pool.end();
    };
  } else if (req.kind === 'vercel') {
    world = openVercel(pkg, req);
  } else if (req.kind === 'package') {
    ({ world, stop } = await openPackage(pkg));
  } else {
    throw new Error(`unknown kind ${req.kind}`);
  }
  const h = nextHandle++;
  handles.set(h, { kind: req.kind, world, stop, eventsDir, pkg, cursors: new Map() });
  return { handle: h };
}

// openPackage creates a third-party World through its package's factory,
// as the runtime does for WORKFLOW_TARGET_WORLD: the default export when it
// is a function, else createWorld, called without arguments (the package
// reads its configuration from the environment). Its queue is not started:
// only its storage (events.create, events.list) is used.
async function openPackage(pkg) {
  const factory = [pkg.mod.default, pkg.mod.createWorld].find((f) => typeof f === 'function');
  if (!factory) {
    throw new Error(`${pkg.pkg.name}: no World factory: neither its default export nor createWorld is a function`);
  }
  const world = await factory();
  if (typeof world?.events?.create !== 'function' || typeof world?.events?.list !== 'function') {
    throw new Error(`${pkg.pkg.name}: its factory returned no World with events.create and events.list`);
  }
  return { world, stop: async () => { await world.close?.(); } };
}

// A stand-in OIDC token: unsigned, expiring in 2100. world-vercel asks
// @vercel/oidc for a token before every request; with none in the
// environment that package looks for a linked Vercel project and the
// user's Vercel credentials, and would call Vercel's API. With this one it
// finds a token that has not expired and goes no further.
const standInToken = ['{"alg":"none","typ":"JWT"}', '{"sub":"stormctl","exp":4102444800}']
  .map((part) => Buffer.from(part).toString('base64url')).join('.') + '.';

// openVercel opens world-vercel's storage (events, runs, steps, hooks; not
// its queue, which only Vercel's can serve) against stormctl's emulation of
// its backend: the package reads the server from VERCEL_WORKFLOW_SERVER_URL
// at each request (and appends /api), one server for the whole process, so
// each world names its own project (the x-vercel-project-id header every
// request carries), by which the emulation tells the worlds apart.
function openVercel(pkg, req) {
  const current = process.env.VERCEL_WORKFLOW_SERVER_URL;
  if (current && current !== req.url) {
    throw new Error(`world-vercel's server is ${current} for this sidecar; cannot open one on ${req.url}`);
  }
  process.env.VERCEL_WORKFLOW_SERVER_URL = req.url;
  process.env.VERCEL_OIDC_TOKEN = standInToken;
  return pkg.mod.createStorage({ projectConfig: { projectId: req.project } });
}

// world-vercel carries each payload field (input, output, result, payload,
// metadata) as the runtime's serialized bytes, and a run's or step's error
// as a string it turns into a { message, stack } on the server. opaque
// holds stormctl's JSON in the package's shapes: bytes of its text, and an
// error as its text, which comes back as the message.
const payloadFields = ['input', 'output', 'result', 'payload', 'metadata'];

function toOpaque(event) {
  if (!event.eventData) return event;
  const eventData = { ...event.eventData };
  for (const f of payloadFields) {
    if (eventData[f] !== undefined) eventData[f] = Buffer.from(JSON.stringify(eventData[f]));
  }
  if (eventData.error !== undefined) eventData.error = JSON.stringify(eventData.error);
  return { ...event, eventData };
}

function fromOpaque(event) {
  if (!event?.eventData) return event;
  const eventData = { ...event.eventData };
  for (const f of payloadFields) {
    if (eventData[f] instanceof Uint8Array) eventData[f] = JSON.parse(Buffer.from(eventData[f]).toString('utf8'));
  }
  const message = eventData.error?.message;
  if (typeof message === 'string') {
    try {
      eventData.error = JSON.parse(message);
    } catch {
      // not stormctl's: left as the package gave it
    }
  }
  return { ...event, eventData };
}

function handleOf(req) {
  const h = handles.get(req.handle);
  if (!h) throw new Error(`unknown handle ${req.handle}`);
  return h;
}

// cursorOf is the package's own list cursor just past event e: world-local's
// is its createdAt and id (kept per event id), world-postgres's its id.
function cursorOf(h, e) {
  if (h.kind !== 'local') return e.eventId;
  const c = `${new Date(e.createdAt).toISOString()}|${e.eventId}`;
  h.cursors.set(e.eventId, c);
  return c;
}

async function create(req) {
  const h = handleOf(req);
  const ac = new AbortController();
  inflight.set(req.id, ac);
  try {
    // As the runtime does: validate (and coerce) the request with the
    // package's own schema, stamped with the spec version it speaks.
    const data = h.pkg.CreateEventSchema.parse({ specVersion: h.pkg.specVersion, ...req.event });
    const w = { delayMs: req.delayMs, signal: ac.signal, eventsDir: h.eventsDir, spent: false };
    const vercel = h.kind === 'vercel';
    const res = await windows.run(w, () => h.world.events.create(req.runId, vercel ? toOpaque(data) : data));
    if (!res?.event) throw new Error(`events.create(${data.eventType}) returned no event`);
    if (vercel) res.event = fromOpaque(res.event);
    cursorOf(h, res.event);
    if (!(w.delayMs > 0)) return { event: res.event };
    return { event: res.event, window: { asked: true, spent: w.spent || null } };
  } finally {
    inflight.delete(req.id);
  }
}

async function list(req) {
  const h = handleOf(req);
  let cursor;
  if (req.after && h.kind !== 'local') {
    cursor = req.after;
  } else if (req.after) {
    cursor = h.cursors.get(req.after);
    if (cursor === undefined) throw new Error(`list after ${req.after}: an event this sidecar has not seen`);
  }
  const page = await h.world.events.list({
    runId: req.runId,
    pagination: { limit: req.limit, cursor, sortOrder: 'asc' },
    resolveData: 'all',
  });
  const data = h.kind === 'vercel' ? page.data.map(fromOpaque) : page.data;
  const events = data.map((e) => ({ event: e, cursor: cursorOf(h, e) }));
  const last = events.at(-1);
  if (last && page.cursor && last.cursor !== page.cursor) {
    throw new Error(`the package's list cursor ${page.cursor} is not the one this sidecar derives (${last.cursor}): its cursor format changed`);
  }
  return { events: events.map((e) => e.event), hasMore: page.hasMore };
}

async function close(req) {
  const h = handleOf(req);
  handles.delete(req.handle);
  await h.stop();
  return {};
}

// bareTypes lists the event types whose data the package's schema drops:
// a draft of each, with data, parsed by its CreateEventSchema, comes back
// without it (an older contract's wait_completed, say).
function bareTypes(p) {
  const out = [];
  for (const eventType of ['step_started', 'hook_disposed', 'wait_completed']) {
    try {
      const parsed = p.CreateEventSchema.parse({
        specVersion: p.specVersion, eventType, correlationId: 'probe',
        eventData: { resumeAt: new Date(0) },
      });
      if (parsed.eventData === undefined) out.push(eventType);
    } catch {
      // the schema refuses the type with data: not bare, refused (the Go side's mapping says so)
    }
  }
  return out;
}

async function hello(req) {
  const versions = {};
  const specs = {};
  for (const [kind, dir] of Object.entries(dirs)) {
    try {
      const pkg = JSON.parse(await fsp.readFile(path.join(dir, 'package.json'), 'utf8'));
      versions[pkg.name ?? kind] = pkg.version;
    } catch (err) {
      versions[kind] = `unreadable: ${err.message}`;
    }
  }
  for (const kind of req?.specs ?? []) {
    const p = await load(kind);
    specs[kind] = {
      package: p.pkg.name, version: p.pkg.version, world: p.worldVersion, specVersion: p.specVersion ?? null,
      bare: bareTypes(p),
    };
  }
  return { versions, node: process.version, specs };
}

const ops = {
  hello,
  open,
  create,
  list,
  close,
  cancel: async (req) => {
    inflight.get(req.target)?.abort();
    return {};
  },
};

function errorOf(err) {
  const cause = err?.cause ?? {};
  return {
    name: String(err?.name ?? 'Error'),
    message: String(err?.message ?? err),
    code: String(err?.code ?? cause.code ?? ''),
    status: Number(err?.status ?? 0),
  };
}

const answers = new net.Socket({ fd: 3, readable: false });
function send(msg) {
  answers.write(JSON.stringify(msg) + '\n');
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    process.stderr.write(`sidecar: unreadable request: ${err.message}\n`);
    return;
  }
  const op = ops[req.op];
  if (!op) {
    send({ id: req.id, error: { name: 'Error', message: `unknown op ${req.op}` } });
    return;
  }
  op(req).then(
    (result) => send({ id: req.id, result }),
    (err) => send({ id: req.id, error: errorOf(err) }),
  );
});
rl.on('close', async () => {
  for (const h of handles.values()) {
    await h.stop().catch(() => {});
  }
  process.exit(0);
});
