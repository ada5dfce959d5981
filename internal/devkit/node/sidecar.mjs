// @ts-check
// stormctl's devkit sidecar: runs the Workflow DevKit's own storage packages
// (@workflow/world-local, @workflow/world-postgres, @workflow/world-vercel's
// storage, or a third-party World package) for stormctl's devkit worlds,
// which drive them through the packages' events.create and events.list.
//
//   node sidecar.mjs --local DIR --postgres DIR [--vercel DIR] [--package DIR]
//
// Each DIR is a package's directory (holding package.json and its built
// entry); its dependencies resolve from there. A third-party package reads
// its configuration from this process's environment (stormctl
// --world-env).
//
// The protocol (transport, ops hello, open, create, list, cancel, close,
// the write window, errors) is in the repository's
// docs/sidecar-protocol.md: the contract between this script and the Go
// side (worlds/devkitworld/sidecar). A change to either side changes that
// page too. Requests come on stdin and answers go on file descriptor 3
// (lib/transport.mjs); standard output and error carry diagnostics only.
// The process exits when stdin ends.

import { AsyncLocalStorage } from 'node:async_hooks';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { importPackage, readManifest, resolveFrom, versionOf } from './lib/packages.mjs';
import { answerPipe, LineWriter, serve } from './lib/transport.mjs';

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
  const pkg = readManifest(dir);
  const req = createRequire(path.join(dir, 'package.json'));
  const mod = await importPackage({ dir, json: pkg });
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
      const pkg = readManifest(dir);
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

// cancel aborts request target's open window: that create fails unwritten.
async function cancel(req) {
  inflight.get(req.target)?.abort();
  return {};
}

const ops = { hello, open, create, list, cancel, close };

const answers = new LineWriter(answerPipe());

serve({
  name: 'sidecar',
  ops,
  send: (msg) => answers.send(msg),
  onClose: async () => {
    for (const h of handles.values()) {
      await h.stop().catch(() => {});
    }
    process.exit(0);
  },
});
