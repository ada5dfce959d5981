// hook-storm as real workflow code (Go: scenarios/hookstorm.go): rounds x
// width branches, each racing its own hook (token "<input.token>:r<r>-b<b>")
// against the 2.5 s watchdog, then the storm tail (storm.ts). A round's hooks
// are created before its fan-out and disposed after its reconciles; the
// driver resumes hook b of a round b x 400 ms after the round's hook 0
// appears in the log, straddling the watchdog.
import { type Hook, sleep } from 'workflow';
import { nextPayload, PATH_HOOK, raceWatchdog, scaled, WATCHDOG_MS } from './common';
import { type RaceResult, type StormInput, stormWorkflow } from './storm';

/** raceHook races the branch's hook against the watchdog (Go: raceHook). */
async function raceHook(input: StormInput, _r: number, _b: number, hook: Hook<string> | undefined): Promise<RaceResult> {
  if (!hook) {
    throw new Error('hook-storm: a branch without its round hook');
  }
  const race = await raceWatchdog(nextPayload(hook), sleep(scaled(WATCHDOG_MS, input.scale)), PATH_HOOK);
  return { path: race.path, won: race.won };
}

/** hookStorm is the hook-storm workflow; it returns the Go model's StormOutput. */
export async function hookStorm(input: StormInput) {
  'use workflow';
  return stormWorkflow(input, { poke: false, roundHooks: true, race: raceHook });
}
