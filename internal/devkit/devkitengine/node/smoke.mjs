// Smoke test of host.mjs: one host per world, a run of each of stormctl's
// five workflows on it, driven the way the Go scenarios' drivers drive them
// (scenarios/*.go Drive), each waited for until run_completed / run_failed
// (or a timeout), then one line per run: outcome, notices, invocations,
// maxConcurrent, and what the host saw of divergences and recoveries.
//
//   cd KIT && node smoke.mjs --bundles DIR [--worlds local,postgres]
//        [--scenarios control,step-storm,...] [--rounds N] [--scale S]
//        [--timeout SECONDS] [--pg postgres://postgres@127.0.0.1:5432]
//        [--notices FILE] [--serial]
//
// KIT is the kit directory (node_modules with the packages); DIR holds the
// bundles build.mjs wrote (DIR/out/workflows.cjs, steps.cjs). postgres: a
// fresh database smoke_<time> is created on the given server with psql and
// dropped afterwards. Runs on one world go at once (--serial: one after
// another). Exit status 0 when control completed on every world, 1
// otherwise. Storm runs that end CORRUPTED_EVENT_LOG are a measurement,
// not a failure of the host.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = parseArgs(process.argv.slice(2));
const scale = Number(args.scale ?? 1);
const rounds = Number(args.rounds ?? 6);
const timeoutMs = Number(args.timeout ?? 300) * 1000;
const worlds = (args.worlds ?? 'local,postgres').split(',');
const scenarios = (args.scenarios ?? 'control,step-storm,hook-storm,blocked-branch,wake-loop').split(',');
const pgServer = args.pg ?? 'postgres://postgres@127.0.0.1:5432';
const bundles = path.resolve(args.bundles ?? fail('--bundles DIR is required'));
const noticeFile = args.notices ? fs.createWriteStream(args.notices) : null;

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    if (argv[i + 1] === undefined || argv[i + 1].startsWith('--')) out[k] = true;
    else out[k] = argv[++i];
  }
  return out;
}

function fail(msg) {
  process.stderr.write(`smoke: ${msg}\n`);
  process.exit(2);
}

const dur = (ms) => Math.trunc(ms * scale);

// Host is one host.mjs process: requests by id, notices counted per run.
class Host {
  constructor(label) {
    this.label = label;
    this.nextId = 1;
    this.pending = new Map();
    this.notices = new Map(); // runId -> {op, invocation, divergence, create, list}
    this.terminal = new Map(); // runId -> the run_completed/run_failed/run_cancelled event
    this.waiters = new Map();
    this.proc = spawn(process.execPath, [path.join(here, 'host.mjs')], {
      cwd: process.cwd(),
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    const diag = fs.createWriteStream(`/tmp/smoke-host-${label}.log`);
    this.proc.stdout.pipe(diag);
    this.proc.stderr.pipe(diag);
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, sig) => resolve({ code, sig })));
    readline.createInterface({ input: this.proc.stdio[3] }).on('line', (line) => this.onLine(line));
  }

  onLine(line) {
    const msg = JSON.parse(line);
    if (msg.notice) {
      noticeFile?.write(`${this.label}\t${line}\n`);
      const runId = msg.runId ?? '-';
      let c = this.notices.get(runId);
      if (!c) this.notices.set(runId, (c = { total: 0, op: 0, create: 0, list: 0, invocation: 0, divergence: 0 }));
      c.total++;
      c[msg.notice] = (c[msg.notice] ?? 0) + 1;
      if (msg.notice === 'op') c[msg.op] = (c[msg.op] ?? 0) + 1;
      if (msg.notice === 'op' && msg.op === 'create' && !msg.error) {
        const t = msg.result?.eventType;
        if (t === 'run_completed' || t === 'run_failed' || t === 'run_cancelled') {
          this.terminal.set(runId, msg.result);
          this.waiters.get(runId)?.(msg.result);
        }
      }
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.error) {
      const err = new Error(`${msg.error.name}: ${msg.error.message}`);
      err.name = msg.error.name;
      p.reject(err);
    } else {
      p.resolve(msg.result);
    }
  }

  call(op, fields = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.proc.stdin.write(JSON.stringify({ id, op, ...fields }) + '\n');
    });
  }

  ended(runId) {
    if (this.terminal.has(runId)) return Promise.resolve(this.terminal.get(runId));
    return new Promise((resolve) => this.waiters.set(runId, resolve));
  }

  async stop() {
    const t0 = Date.now();
    this.proc.stdin.end();
    const r = await this.exited;
    return { ...r, ms: Date.now() - t0 };
  }
}

// ---------------------------------------------------------------- drivers

function hookCreated(events) {
  return events.filter((e) => e.eventType === 'hook_created').map((e) => e.eventData?.token);
}

async function resumeQuiet(host, token, payload) {
  try {
    await host.call('resumeHook', { token, payload });
    return 'ok';
  } catch (err) {
    if (err.name === 'HookNotFoundError') return 'not-found';
    return `error: ${err.message}`;
  }
}

// drivers[scenario](host, runId, token, done) drives the run until done.
const drivers = {
  // control: resume "ctl" once 15-25 s in, clear of any pending 5 s race
  // timer (never within 20% of it).
  async control(host, runId, token, done) {
    await Promise.race([sleep(dur(15000 + Math.random() * 10000)), done]);
    const margin = dur(5000) / 5;
    while (!done.settled) {
      const { events } = await host.call('events', { runId, actor: 'driver' });
      const completed = new Set(events.filter((e) => e.eventType === 'wait_completed').map((e) => e.correlationId));
      const close = events.some((e) => e.eventType === 'wait_created' && !completed.has(e.correlationId) &&
        new Date(e.eventData?.resumeAt).getTime() - Date.now() <= margin);
      if (!close) {
        const r = await resumeQuiet(host, `${token}:ctl`, 'wake');
        if (r === 'ok') return;
        if (r !== 'not-found') throw new Error(`control resume: ${r}`);
      }
      await Promise.race([sleep(dur(250)), done]);
    }
  },
  // step-storm: poke "poke" every 0.75-1 s, 8x slower after 64 pokes.
  async 'step-storm'(host, runId, token, done) {
    let sent = 0;
    for (let k = 0; !done.settled; k++) {
      const gap = (750 + Math.random() * 250) * (sent >= 64 ? 8 : 1);
      await Promise.race([sleep(dur(gap)), done]);
      if (done.settled) return;
      const r = await resumeQuiet(host, `${token}:poke`, { k });
      if (r === 'ok') sent++;
    }
  },
  // hook-storm: hook b of a round resumed b x 400 ms after its hook 0 appears.
  async 'hook-storm'(host, runId, token, done) {
    await roundHooks(host, runId, token, done, (_r, b) => dur(b * 400));
  },
  // blocked-branch: a round's hooks resumed in one burst 4-5.2 s after hook 0.
  async 'blocked-branch'(host, runId, token, done) {
    const burst = new Map();
    await roundHooks(host, runId, token, done, (r) => {
      if (!burst.has(r)) burst.set(r, dur(4000 + Math.random() * 1200));
      return burst.get(r);
    });
  },
  // wake-loop: wakes (half fresh), sometimes in bursts of 4, gaps 0.2-1.5 s
  // or an idle of about one heartbeat.
  async 'wake-loop'(host, runId, token, done) {
    let n = 0;
    while (!done.settled) {
      const count = Math.random() < 0.25 ? 4 : 1;
      for (let i = 0; i < count && !done.settled; i++) {
        n++;
        for (;;) {
          const r = await resumeQuiet(host, `${token}:wake`, { n, fresh: Math.random() < 0.5 });
          if (r === 'ok' || done.settled) break;
          if (r !== 'not-found') throw new Error(`wake ${n}: ${r}`);
          await Promise.race([sleep(dur(250)), done]);
        }
      }
      const gap = Math.random() < 0.3 ? 4000 * (0.8 + Math.random() * 0.4) : 200 + Math.random() * 1300;
      await Promise.race([sleep(dur(gap)), done]);
    }
  },
};

async function roundHooks(host, runId, token, done, offset) {
  const roundStart = new Map();
  const scheduled = new Set();
  const sends = [];
  while (!done.settled) {
    await Promise.race([sleep(dur(250)), done]);
    if (done.settled) break;
    let events;
    try {
      ({ events } = await host.call('events', { runId, actor: 'driver' }));
    } catch {
      continue;
    }
    const t = Date.now();
    const hooks = [];
    for (const tok of hookCreated(events)) {
      const m = /^(.*):r(\d+)-b(\d+)$/.exec(tok ?? '');
      if (m && m[1] === token) hooks.push([Number(m[2]), Number(m[3])]);
    }
    for (const [r, b] of hooks) if (b === 0 && !roundStart.has(r)) roundStart.set(r, t);
    for (const [r, b] of hooks) {
      const key = `r${r}-b${b}`;
      if (!roundStart.has(r) || scheduled.has(key)) continue;
      scheduled.add(key);
      const at = roundStart.get(r) + offset(r, b);
      sends.push((async () => {
        await Promise.race([sleep(Math.max(0, at - Date.now())), done]);
        const giveUp = Date.now() + dur(5000);
        while (!done.settled) {
          const res = await resumeQuiet(host, `${token}:${key}`, `hook(r=${r},b=${b})`);
          if (res !== 'not-found' || Date.now() > giveUp) return;
          await Promise.race([sleep(dur(50)), done]);
        }
      })());
    }
  }
  await Promise.all(sends);
}

// ---------------------------------------------------------------- runs

const workflowOf = {
  'step-storm': ['step-storm', 'stepStorm'],
  'hook-storm': ['hook-storm', 'hookStorm'],
  'blocked-branch': ['blocked-branch', 'blockedBranch'],
  'wake-loop': ['wake-loop', 'wakeLoop'],
  control: ['control', 'control'],
};

function inputOf(scenario, token) {
  switch (scenario) {
    case 'control':
      return { iterations: 8, scale, token };
    case 'wake-loop':
      return { wakes: 12, maxCycles: 80, scale, token };
    default:
      return { rounds, width: 8, scale, seed: 1, token };
  }
}

async function runOne(host, scenario, world) {
  const [file, fn] = workflowOf[scenario];
  const token = `smoke-${world}-${scenario}-${Date.now().toString(36)}`;
  const t0 = Date.now();
  const { runId } = await host.call('start', { workflowId: `workflow//./workflows/${file}//${fn}`, input: inputOf(scenario, token) });
  const done = host.ended(runId).then((e) => ({ event: e }));
  const timeout = sleep(timeoutMs).then(() => ({ timeout: true }));
  const end = Promise.race([done, timeout]);
  end.settled = false;
  end.then(() => {
    end.settled = true;
  });
  const driver = drivers[scenario](host, runId, token, end).catch((err) => `driver: ${err.message}`);
  const result = await end;
  const driverErr = await driver;
  if (result.timeout) await host.call('cancel', { runId, actor: 'driver' }).catch(() => {});
  await sleep(300); // let the last deliveries' notices arrive
  const st = await host.call('status', { runId });
  let ledger;
  if (result.event?.eventType === 'run_completed') {
    const out = await host.call('output', { runId }).catch((err) => ({ error: err.message }));
    const text = JSON.stringify(out.output);
    ledger = out.error ? `error: ${out.error}` : text.length > 400 ? `${text.length} bytes` : text;
  }
  const c = host.notices.get(runId) ?? {};
  const ev = result.event;
  let outcome = result.timeout ? 'stuck' : ev.eventType === 'run_completed' ? 'completed' : ev.eventType;
  if (ev?.eventType === 'run_failed') outcome = `failed:${ev.eventData?.errorCode ?? '?'}`;
  return {
    world, scenario, runId, outcome, seconds: ((Date.now() - t0) / 1000).toFixed(1),
    notices: c.total ?? 0, creates: c.create ?? 0, lists: c.list ?? 0,
    invocations: st.invocations, steps: st.steps, maxConcurrent: st.maxConcurrent,
    redeliveries: st.redeliveries, retries: st.retries, recoveries: st.recoveries,
    divergences: st.divergences.length, status: st.status, ledger,
    error: st.errorMessage ? st.errorMessage.slice(0, 160) : undefined,
    lastDivergence: st.divergences.at(-1)?.message?.slice(0, 160),
    driver: typeof driverErr === 'string' ? driverErr : undefined,
  };
}

function psql(sql) {
  const r = spawnSync('psql', [pgServer + '/postgres', '-v', 'ON_ERROR_STOP=1', '-qc', sql], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`psql ${sql}: ${r.stderr}`);
}

async function onWorld(world) {
  const host = new Host(world);
  const open = { world, workflows: path.join(bundles, 'out', 'workflows.cjs'), steps: path.join(bundles, 'out', 'steps.cjs') };
  for (const ext of ['cjs', 'mjs']) {
    for (const k of ['workflows', 'steps']) {
      const p = path.join(bundles, 'out', `${k}.${ext}`);
      if (fs.existsSync(p)) open[k] = p;
    }
  }
  let db;
  const tmp = fs.mkdtempSync('/tmp/smoke-');
  if (world === 'local') {
    open.dataDir = path.join(tmp, 'data');
  } else {
    db = `smoke_${Date.now()}`;
    psql(`create database ${db}`);
    open.url = `${pgServer}/${db}`;
    open.dataDir = tmp;
  }
  const rows = [];
  try {
    const info = await host.call('open', open);
    console.log(`${world}: opened`, JSON.stringify(info));
    if (args.serial) {
      for (const s of scenarios) rows.push(await runOne(host, s, world));
    } else {
      rows.push(...(await Promise.all(scenarios.map((s) => runOne(host, s, world)))));
    }
  } finally {
    const stop = await host.stop();
    console.log(`${world}: host exited code=${stop.code} signal=${stop.sig} in ${stop.ms} ms after stdin ended`);
    if (db) {
      try {
        psql(`drop database ${db}`);
      } catch (err) {
        console.log(`${world}: ${err.message.trim()}`);
      }
    }
  }
  for (const r of rows) console.log(JSON.stringify(r));
  return rows;
}

const all = [];
for (const w of worlds) all.push(...(await onWorld(w)));
noticeFile?.end();
const controlOk = worlds.every((w) => !scenarios.includes('control') || all.some((r) => r.world === w && r.scenario === 'control' && r.outcome === 'completed'));
console.log(controlOk ? 'smoke: control completed on every world' : 'smoke: CONTROL DID NOT COMPLETE');
process.exit(controlOk ? 0 : 1);
