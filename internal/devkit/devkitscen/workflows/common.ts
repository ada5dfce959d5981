// Helpers shared by stormctl's scenarios written as real workflow code. They
// mirror scenarios/scenario.go and scenarios/storm.go of the Go model: the
// strings the steps return and the race the storms run are the model's, so
// the Go ledger checks read these runs' outputs unchanged.
//
// Nothing here is a step or a workflow: it is plain code, run inside the
// workflow sandbox (raceWatchdog, nextPayload, scaled) or inside a step
// (work, expect).
import type { Hook } from 'workflow';

/** The arguments of every scenario step (Go: stepArgs). */
export interface StepArgs {
  r: number;
  b: number;
  path?: string;
  ms: number;
}

/** The one correct result of a step (Go: expect). */
export function expect(name: string, a: { r: number; b: number; path?: string }): string {
  return a.path ? `${name}(r=${a.r},b=${a.b},${a.path})` : `${name}(r=${a.r},b=${a.b})`;
}

/** The step's work: it takes ms milliseconds (Go: StepOutcome.Took). */
export async function work(ms: number): Promise<void> {
  if (ms > 0) {
    await new Promise<void>((resolve) => setTimeout(resolve, ms));
  }
}

/**
 * A duration of ms milliseconds at time scale 1, scaled and truncated to
 * whole milliseconds as the Go model does (ms(in.dur(d))).
 */
export function scaled(ms: number, scale: number): number {
  return Math.max(0, Math.trunc(ms * scale));
}

/** Paths a branch's race can take (Go: pathTimer, pathStep, pathHook). */
export const PATH_TIMER = 'timer';
export const PATH_STEP = 'step';
export const PATH_HOOK = 'hook';

/** The watchdog of step-storm and hook-storm, and the storms' short steps. */
export const WATCHDOG_MS = 2500;
export const SHORT_STEP_MS = 100;
export const ROUND_PAUSE_MS = 1000;

/** The outcome of a race against a watchdog sleep. */
export interface RaceOutcome<T> {
  path: string;
  won?: T;
}

/**
 * raceWatchdog races first against the watchdog sleep (Go: raceWatchdog):
 * the timer path if the watchdog resolves first, else path with the value
 * first resolved with. Which one resolves first is the runtime's delivery
 * order: core 4.8.9 delivers step results, hook payloads and wait
 * completions behind delivery barriers, in the order of step_completed /
 * hook_received and wait_completed in the log as this replay reads it, with a
 * macrotask between an earlier delivery and a later one, so the few
 * microtask hops of the wrappers below do not decide the race. The winner is
 * told apart by which wrapper resolved, not by the value (a payload may be
 * anything).
 */
export async function raceWatchdog<T>(first: Promise<T>, watchdog: Promise<void>, path: string): Promise<RaceOutcome<T>> {
  const winner = await Promise.race([
    first.then((value) => ({ value })),
    watchdog.then(() => null),
  ]);
  return winner === null ? { path: PATH_TIMER } : { path, won: winner.value };
}

/**
 * nextPayload is one read of a hook (Go: Hook.Next): a promise of the next
 * payload the hook receives. Every call is a new read that takes its own
 * payload, so a scenario that reuses one pending read across races (control,
 * wake-loop) keeps the promise, as the Go model keeps its Future.
 */
export function nextPayload<T>(hook: Hook<T>): Promise<T> {
  return hook.then((payload) => payload);
}

/** The hook token of the scenario token t in a run whose input token is prefix. */
export function hookToken(prefix: string, t: string): string {
  return `${prefix}:${t}`;
}
