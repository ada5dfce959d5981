// fan-out as real workflow code (Go: scenarios/fanout.go): step-storm without
// its side hook. The same rounds x width branches racing the settle step
// against the 2.5 s watchdog, the same tail (storm.ts), and no hook: nothing
// is sent to the run from outside.
//
// Why it exists: @workflow/core 5.0 folds a suspension's step_created and
// wait_created writes into one events.createBatch call only when the
// suspension holds no hook and no attribute (its suspension handler's
// batchFanoutEligible), on a World with createBatch and a run on slot ids.
// Every other scenario keeps a hook for its whole run, so this is the one
// whose runs record batch creates.
import { raceSettle, stormWorkflow, type StormInput } from './storm';

/** fanOut is the fan-out workflow; it returns the Go model's StormOutput. */
export async function fanOut(input: StormInput) {
  'use workflow';
  return stormWorkflow(input, { poke: false, roundHooks: false, race: raceSettle });
}
