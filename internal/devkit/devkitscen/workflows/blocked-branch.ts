// blocked-branch as real workflow code (Go: scenarios/blockedbranch.go):
// hook-storm with each branch first parked on a launch step (the settle
// step, 2.2 s + b x 300 ms), then racing its own hook (token
// "<input.token>:r<r>-b<b>") against an 8 s watchdog, then the storm tail
// (storm.ts). The driver resumes a round's hooks in one burst 4-5.2 s after
// the round's hook 0 appears, at the tail of the launch completions.
//
// Differences from the Go model, forced by @workflow/core 4.8.9: the launch
// (settle) step sets no run attribute (see settle in storm.ts).
import { type Hook, sleep } from 'workflow';
import { nextPayload, PATH_HOOK, raceWatchdog, scaled } from './common';
import { type RaceResult, settle, type StormInput, stormWorkflow } from './storm';

/** The blocked-branch watchdog, sized to lose to the resume burst (Go: blockedWatchdog). */
const BLOCKED_WATCHDOG_MS = 8000;

/** launchDelayMs is branch b's launch duration at time scale 1 (Go: launchDelay). */
export function launchDelayMs(b: number): number {
  return 2200 + b * 300;
}

/** raceBlocked runs the branch's launch step, then races its hook against the watchdog (Go: raceBlocked). */
async function raceBlocked(input: StormInput, r: number, b: number, hook: Hook<string> | undefined): Promise<RaceResult> {
  if (!hook) {
    throw new Error('blocked-branch: a branch without its round hook');
  }
  const launch = await settle({ r, b, ms: scaled(launchDelayMs(b), input.scale) });
  const race = await raceWatchdog(nextPayload(hook), sleep(scaled(BLOCKED_WATCHDOG_MS, input.scale)), PATH_HOOK);
  return { path: race.path, won: race.won, launch };
}

/** blockedBranch is the blocked-branch workflow; it returns the Go model's StormOutput. */
export async function blockedBranch(input: StormInput) {
  'use workflow';
  return stormWorkflow(input, { poke: false, roundHooks: true, race: raceBlocked });
}
