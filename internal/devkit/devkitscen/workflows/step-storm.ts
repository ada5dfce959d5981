// step-storm as real workflow code (Go: scenarios/stepstorm.go): rounds x
// width branches, each racing the slow settle step (1.7-2.7 s in the
// harness's 5 jitter buckets) against a 2.5 s watchdog, then the storm tail
// (storm.ts). A side hook (token "<input.token>:poke") the workflow never
// reads is resumed by the driver every 0.75-1 s, so hook_received events and
// the flow invocations they enqueue keep arriving.
//
// Differences from the Go model, forced by @workflow/core 4.8.9: the settle
// step sets no run attribute (see settle in storm.ts), so the log holds no
// attr_set.
import { sleep } from 'workflow';
import { PATH_STEP, raceWatchdog, scaled, WATCHDOG_MS } from './common';
import { type RaceResult, settle, type StormInput, stormWorkflow } from './storm';

/**
 * settleDelayMs is branch (r, b)'s settle duration at time scale 1 (Go:
 * settleDelay): 2200 + ((r*3 + b*5) mod 5 - 2) x 250 ms. As in the harness,
 * b*5 is 0 mod 5, so every branch of a round falls in one bucket.
 */
export function settleDelayMs(r: number, b: number): number {
  return 2200 + (((r * 3 + b * 5) % 5) - 2) * 250;
}

/** raceSettle races branch (r, b)'s settle step against the watchdog (Go: raceSettle). */
async function raceSettle(input: StormInput, r: number, b: number): Promise<RaceResult> {
  const step = settle({ r, b, ms: scaled(settleDelayMs(r, b), input.scale) });
  const race = await raceWatchdog(step, sleep(scaled(WATCHDOG_MS, input.scale)), PATH_STEP);
  return { path: race.path, won: race.won };
}

/** stepStorm is the step-storm workflow; it returns the Go model's StormOutput. */
export async function stepStorm(input: StormInput) {
  'use workflow';
  return stormWorkflow(input, { poke: true, roundHooks: false, race: raceSettle });
}
