// control (hook-sleep) as real workflow code (Go: scenarios/control.go): one
// hook (token "<input.token>:ctl") read through one pending read reused
// across iterations; 8 iterations of a sync step, then that read raced
// against a 5 s sleep. The timer path sleeps 1 s and 1.25 s in parallel and
// goes on; a wake runs drain and returns. The driver resumes the hook once,
// 15-25 s in, clear of the race's timer, so no two facts race: a corrupted
// control means the harness is broken.
import { createHook, sleep } from 'workflow';
import { expect, hookToken, nextPayload, PATH_HOOK, PATH_TIMER, raceWatchdog, scaled, SHORT_STEP_MS, type StepArgs, work } from './common';

/** The input of control runs (Go: controlInput) plus the run's token prefix. */
export interface ControlInput {
  iterations: number;
  scale: number;
  token: string;
}

/** One iteration's ledger entry (Go: ControlIteration; keys in its order). */
export interface ControlIteration {
  i: number;
  path: string;
  sync: string;
  payload?: string;
  drain?: string;
}

/** The hook's token (Go: controlToken). */
export const CONTROL_TOKEN = 'ctl';

const CONTROL_SLEEP_MS = 5000;
const CONTROL_WAIT_A_MS = 1000;
const CONTROL_WAIT_B_MS = 1250;

/** sync opens every iteration. */
export async function sync(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  return expect('sync', a);
}

/** drain runs once, on the iteration the hook wakes. */
export async function drain(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  return expect('drain', a);
}

/** control is the control workflow; it returns the Go model's []ControlIteration. */
export async function control(input: ControlInput) {
  'use workflow';
  const short = scaled(SHORT_STEP_MS, input.scale);
  const hook = createHook<string>({ token: hookToken(input.token, CONTROL_TOKEN) });
  let pending: Promise<string> | undefined; // the one pending read, reused until it wins
  const out: ControlIteration[] = [];
  for (let i = 0; i < input.iterations; i++) {
    const synced = await sync({ r: i, b: 0, ms: short });
    if (!pending) {
      pending = nextPayload(hook);
    }
    const race = await raceWatchdog(pending, sleep(scaled(CONTROL_SLEEP_MS, input.scale)), PATH_HOOK);
    if (race.path === PATH_TIMER) {
      await Promise.all([sleep(scaled(CONTROL_WAIT_A_MS, input.scale)), sleep(scaled(CONTROL_WAIT_B_MS, input.scale))]);
      out.push({ i, path: race.path, sync: synced });
      continue;
    }
    const drained = await drain({ r: i, b: 0, ms: short });
    const it: ControlIteration = { i, path: race.path, sync: synced };
    if (race.won) it.payload = race.won;
    it.drain = drained;
    out.push(it);
    break; // returnOnWake
  }
  hook.dispose();
  return out;
}
