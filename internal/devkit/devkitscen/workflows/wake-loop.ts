// wake-loop as real workflow code (Go: scenarios/wakeloop.go): one loop
// racing a reusable read of the wake hook (token "<input.token>:wake")
// against a heartbeat sleep, its concurrency supplied by the driver's
// resumes. A fresh wake or a heartbeat win runs a four-step cycle
// (verify/drain/verify/sync), a stale wake none, every 5th drain asks for
// one more cycle; until 12 fresh wakes or 80 cycles. A second hook (token
// "<input.token>:abort") is created and never read. It returns the Go
// model's WakeLoopOutput.
import { createHook, sleep } from 'workflow';
import { expect, hookToken, nextPayload, scaled, type StepArgs, work } from './common';

/** The input of wake-loop runs (Go: wakeLoopInput) plus the run's token prefix. */
export interface WakeLoopInput {
  wakes: number;
  maxCycles: number;
  scale: number;
  token: string;
}

/** What the driver sends (Go: WakePayload). */
export interface WakePayload {
  n: number;
  fresh: boolean;
}

/** One cycle's ledger entry (Go: WakeCycle; keys in its order). */
export interface WakeCycle {
  i: number;
  cause: string;
  before: string;
  drain: string;
  after: string;
  sync: string;
}

/** One race of the pending wake read against the heartbeat (Go: WakeRace). */
export interface WakeRace {
  arm?: string;
  winner: string;
  n?: number;
  fresh?: boolean;
}

/** The ledger (Go: WakeLoopOutput). */
export interface WakeLoopOutput {
  cycles: WakeCycle[];
  races: WakeRace[];
  fresh: number;
  stale: number;
  heartbeats: number;
}

/** The hooks' tokens (Go: wakeToken, abortToken). */
export const WAKE_TOKEN = 'wake';
export const ABORT_TOKEN = 'abort';

const CONTINUE_EVERY = 5;
const HEARTBEAT_MS = 4000;
const VERIFY_STEP_MS = 50;
const SYNC_STEP_MS = 50;
const DRAIN_BYTES = 8192;

/** drainDelayMs is cycle i's drain duration at time scale 1 (Go: drainDelay). */
export function drainDelayMs(i: number): number {
  return 600 + ((i * 7) % 10) * 50;
}

/** verify checks a cycle before and after its drain, and arms a heartbeat. */
export async function verify(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  return expect('verify', a);
}

/**
 * drain is a pure step whose result is ~8 KB (Go: drainResult): its name, a
 * ":more" mark on every 5th cycle, padded with "x" to 8192 bytes, so replays
 * pay real hydration.
 */
export async function drain(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  let head = expect('drain', { r: a.r, b: 0 });
  if (a.r % CONTINUE_EVERY === CONTINUE_EVERY - 1) {
    head += ':more';
  }
  return head + 'x'.repeat(Math.max(DRAIN_BYTES - head.length, 0));
}

/** sync closes every cycle. */
export async function sync(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  return expect('sync', a);
}

/** trimX is the drain result without its padding (Go: strings.TrimRight(res, "x")). */
function trimX(s: string): string {
  let end = s.length;
  while (end > 0 && s[end - 1] === 'x') {
    end--;
  }
  return s.slice(0, end);
}

/** drainMore reports whether a drain result asks for another cycle (Go: drainMore). */
function drainMore(res: string): boolean {
  return trimX(res).endsWith(':more');
}

/**
 * drainDigest stands for a drain result in the ledger (Go: drainDigest): its
 * head, its length and the first 6 bytes of its SHA-256, in hex. The digest
 * is computed synchronously in the workflow (sha256 below): an await on
 * crypto.subtle would be a host promise the runtime does not track, which
 * its idle check could suspend the run over.
 */
function drainDigest(res: string): string {
  const bytes = new TextEncoder().encode(res);
  const sum = sha256(bytes).slice(0, 6);
  const hex = Array.from(sum, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${trimX(res)}/${bytes.length}/${hex}`;
}

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** sha256 is FIPS 180-4 SHA-256 of msg. */
export function sha256(msg: Uint8Array): Uint8Array {
  const bitLen = msg.length * 8;
  const padded = new Uint8Array(Math.ceil((msg.length + 9) / 64) * 64);
  padded.set(msg);
  padded[msg.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bitLen / 0x100000000));
  view.setUint32(padded.length - 4, bitLen >>> 0);
  const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const w = new Uint32Array(64);
  const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
  for (let off = 0; off < padded.length; off += 64) {
    for (let t = 0; t < 16; t++) {
      w[t] = view.getUint32(off + t * 4);
    }
    for (let t = 16; t < 64; t++) {
      const s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
      const s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let t = 0; t < 64; t++) {
      const S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + K[t] + w[t]) >>> 0;
      const S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) {
    outView.setUint32(i * 4, h[i]);
  }
  return out;
}

/** wakeLoop is the wake-loop workflow (Go: wakeLoopProgram). */
export async function wakeLoop(input: WakeLoopInput) {
  'use workflow';
  const dur = (ms: number) => scaled(ms, input.scale);
  const abort = createHook<unknown>({ token: hookToken(input.token, ABORT_TOKEN) }); // never read
  const wake = createHook<WakePayload>({ token: hookToken(input.token, WAKE_TOKEN) });
  const out: WakeLoopOutput = { cycles: [], races: [], fresh: 0, stale: 0, heartbeats: 0 };

  const check = (i: number, phase: string) => verify({ r: i, b: 0, path: phase, ms: dur(VERIFY_STEP_MS) });
  const cycle = async (cause: string): Promise<boolean> => {
    const i = out.cycles.length;
    const before = await check(i, 'before');
    const drained = await drain({ r: i, b: 0, ms: dur(drainDelayMs(i)) });
    const after = await check(i, 'after');
    const synced = await sync({ r: i, b: 0, ms: dur(SYNC_STEP_MS) });
    out.cycles.push({ i, cause, before, drain: drainDigest(drained), after, sync: synced });
    return drainMore(drained);
  };

  let pending = nextPayload(wake); // carried across heartbeat wins
  let beat: Promise<void> | undefined;
  let more = await cycle('start');
  while (out.fresh < input.wakes && out.cycles.length < input.maxCycles) {
    while (more && out.cycles.length < input.maxCycles) {
      more = await cycle('continue');
    }
    if (out.cycles.length >= input.maxCycles) {
      break;
    }
    let arm: string | undefined;
    if (!beat) {
      arm = await check(out.cycles.length, 'heartbeat');
      beat = sleep(dur(HEARTBEAT_MS));
    }
    // Built in the Go encoder's key order, its omitempty fields left out.
    const race: WakeRace = arm ? { arm, winner: '' } : { winner: '' };
    const won = await Promise.race([pending.then((p) => ({ p })), beat.then(() => null)]);
    if (won === null) {
      race.winner = 'heartbeat';
      out.races.push(race);
      beat = undefined;
      out.heartbeats++;
      more = await cycle('heartbeat');
      continue;
    }
    pending = nextPayload(wake); // consumed: the next race reads the next payload
    race.winner = 'wake';
    if (won.p.n) race.n = won.p.n;
    if (won.p.fresh) race.fresh = true;
    out.races.push(race);
    if (won.p.fresh) {
      out.fresh++;
      more = await cycle('wake');
    } else {
      out.stale++;
      more = false;
    }
  }
  wake.dispose();
  abort.dispose();
  return out;
}
