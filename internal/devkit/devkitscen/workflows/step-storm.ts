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
import { raceSettle, stormWorkflow, type StormInput } from './storm';

/** stepStorm is the step-storm workflow; it returns the Go model's StormOutput. */
export async function stepStorm(input: StormInput) {
  'use workflow';
  return stormWorkflow(input, { poke: true, roundHooks: false, race: raceSettle });
}
