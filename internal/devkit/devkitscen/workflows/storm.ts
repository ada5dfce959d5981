// The storm shape shared by step-storm, hook-storm and blocked-branch, as real
// workflow code (Go: scenarios/storm.go, stormProgram): rounds x width
// branches, each racing (the scenario's race) then running the
// recover/finalize/release tail behind the race; then 2 + stragglers
// reconciles in parallel; then the round pause. Its steps return exactly what
// the Go model's steps return, and the workflows return exactly the Go
// model's StormOutput, so the Go check (checkStorm) reads them unchanged.
import { createHook, sleep, type Hook } from 'workflow';
import {
  expect,
  hookToken,
  PATH_STEP,
  PATH_TIMER,
  raceWatchdog,
  ROUND_PAUSE_MS,
  scaled,
  SHORT_STEP_MS,
  type StepArgs,
  WATCHDOG_MS,
  work,
} from './common';

/**
 * The input of step-storm, hook-storm and blocked-branch runs (Go:
 * stormInput) plus the run's token prefix, which every hook token of the
 * run carries (hook tokens are global in the real world).
 */
export interface StormInput {
  rounds: number;
  width: number;
  scale: number;
  seed: number;
  token: string;
}

/** One branch's ledger entry (Go: Branch; keys in the Go encoder's order). */
export interface Branch {
  r: number;
  b: number;
  path: string;
  launch?: string;
  won?: string;
  recover?: string;
  finalize: string;
  release: string;
}

/** One round's ledger (Go: Round). */
export interface Round {
  branches: Branch[];
  reconciles: string[];
}

/** What a branch's race decided (Go: the Path, Won and Launch it fills). */
export interface RaceResult {
  path: string;
  won?: string;
  launch?: string;
}

/** What tells the storms apart (Go: stormShape). */
export interface StormShape {
  /** A side hook (token "poke") created before the rounds, never read, disposed at the end. */
  poke: boolean;
  /** Each round creates its width hooks (tokens r<r>-b<b>) before its fan-out and disposes them after its reconciles. */
  roundHooks: boolean;
  /** Branch (r, b)'s race; hook is the branch's round hook (undefined without roundHooks). */
  race: (input: StormInput, r: number, b: number, hook: Hook<string> | undefined) => Promise<RaceResult>;
}

/** The token of step-storm's side hook (Go: pokeToken). */
export const POKE_TOKEN = 'poke';

/** The token of round r's hook of branch b (Go: hookToken). */
export function roundHookToken(r: number, b: number): string {
  return `r${r}-b${b}`;
}

/**
 * settle is the storms' slow step. In the Go model it also sets the run
 * attribute settle=r<r>.b<b> from inside the step (an out-of-band attr_set
 * written by the step worker, as the harness's settle step calls
 * setAttributes). @workflow/core 4.8.9 has no attribute API (no
 * setAttributes, no attr_set event), so this step writes nothing out of
 * band: the real run's log has no attr_set. Its result is the model's.
 */
export async function settle(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  return expect('settle', a);
}

/** recover runs on a branch whose watchdog won its race. */
export async function recover(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  return expect('recover', a);
}

/** finalize runs on every branch; its arguments name the branch's path. */
export async function finalize(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  return expect('finalize', a);
}

/** release runs last on every branch. */
export async function release(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  return expect('release', a);
}

/** reconcile runs 2 + stragglers times in parallel after a round's branches. */
export async function reconcile(a: StepArgs): Promise<string> {
  'use step';
  await work(a.ms);
  return expect('reconcile', a);
}

/**
 * settleDelayMs is branch (r, b)'s settle duration at time scale 1 (Go:
 * settleDelay): 2200 + ((r*3 + b*5) mod 5 - 2) x 250 ms. As in the harness,
 * b*5 is 0 mod 5, so every branch of a round falls in one bucket.
 */
export function settleDelayMs(r: number, b: number): number {
  return 2200 + (((r * 3 + b * 5) % 5) - 2) * 250;
}

/** raceSettle races branch (r, b)'s settle step against the watchdog (Go: raceSettle): step-storm's and fan-out's race. */
export async function raceSettle(input: StormInput, r: number, b: number): Promise<RaceResult> {
  const step = settle({ r, b, ms: scaled(settleDelayMs(r, b), input.scale) });
  const race = await raceWatchdog(step, sleep(scaled(WATCHDOG_MS, input.scale)), PATH_STEP);
  return { path: race.path, won: race.won };
}

/**
 * stormWorkflow is the body of the storm workflows (Go: stormProgram): the
 * rounds, each followed by the round pause, the side hook disposed at the
 * end. It returns the Go model's StormOutput.
 */
export async function stormWorkflow(input: StormInput, shape: StormShape): Promise<{ rounds: Round[] }> {
  const poke = shape.poke ? createHook<unknown>({ token: hookToken(input.token, POKE_TOKEN) }) : undefined;
  const rounds: Round[] = [];
  for (let r = 0; r < input.rounds; r++) {
    rounds.push(await stormRound(input, shape, r));
    await sleep(scaled(ROUND_PAUSE_MS, input.scale));
  }
  poke?.dispose();
  return { rounds };
}

/**
 * stormRound is round r (Go: stormRound): its hooks created in the main
 * branch before the fan-out, the width branches at once, the 2 + stragglers
 * reconciles in parallel, then the hooks disposed.
 */
async function stormRound(input: StormInput, shape: StormShape, r: number): Promise<Round> {
  const hooks: (Hook<string> | undefined)[] = [];
  for (let b = 0; b < input.width; b++) {
    hooks.push(shape.roundHooks ? createHook<string>({ token: hookToken(input.token, roundHookToken(r, b)) }) : undefined);
  }
  const branches = await Promise.all(hooks.map((hook, b) => branchTail(input, shape, r, b, hook)));
  const stragglers = branches.filter((br) => br.path === PATH_TIMER).length;
  const short = scaled(SHORT_STEP_MS, input.scale);
  const reconciles = await Promise.all(
    Array.from({ length: 2 + stragglers }, (_, i) => reconcile({ r, b: i, ms: short })),
  );
  for (const hook of hooks) {
    hook?.dispose();
  }
  return { branches, reconciles };
}

/**
 * branchTail is one branch (Go: branchTail): the race, then recover (timer
 * path only), finalize and release.
 */
async function branchTail(
  input: StormInput,
  shape: StormShape,
  r: number,
  b: number,
  hook: Hook<string> | undefined,
): Promise<Branch> {
  const race = await shape.race(input, r, b, hook);
  const short = scaled(SHORT_STEP_MS, input.scale);
  let recovered: string | undefined;
  if (race.path === PATH_TIMER) {
    recovered = await recover({ r, b, ms: short });
  }
  const finalized = await finalize({ r, b, path: race.path, ms: short });
  const released = await release({ r, b, ms: short });
  // Built in the Go encoder's key order, with its omitempty fields left out
  // when empty, so the ledger is byte for byte the model's shape.
  const br: Branch = { r, b, path: race.path } as Branch;
  if (race.launch) br.launch = race.launch;
  if (race.won) br.won = race.won;
  if (recovered) br.recover = recovered;
  br.finalize = finalized;
  br.release = released;
  return br;
}
