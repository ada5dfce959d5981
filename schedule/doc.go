// Package schedule is the text format of a run's recorded interleaving,
// and its re-execution: who wrote which event when, which events each
// invocation's page showed, and what each invocation wrote from what it had
// read. It is the format of explain's fixtures (explain/testdata) and of
// the minimal cases stormctl shrink writes.
//
// One item a line ('#' starts a comment):
//
//	run ID                              the run's id (default run-fx): positional ids derive from it
//	scenario NAME                       the workflow program, looked up by the caller
//	scheme ulid|seq|sequence|slot       ids positional|callsite       wake ordered|engine|...
//	knob KEY=VALUE                      another knob of the condition (fence=decisions, ...) over main's
//	outcome NAME                        detail TEXT                     ended MS
//	quiet MS                            steps NAME=MS,...
//	start LABEL at=MS [payload=JSON]    the starter writes run_created (the run's input; none: null)
//	list ACTOR after=LABEL|- at=MS[-MS] [more] read=LABEL,...|-
//	listerr ACTOR after=LABEL|- at=MS err=hole|gap [slot=N above=M]
//	write ACTOR LABEL,... at=MS [commit=D,...] [swap=I,J] [view=ACTOR]
//	fact ACTOR LABEL TYPE of=LABEL at=MS [commit=D] [dedup=X] [payload=JSON]
//	fail ACTOR LABEL at=MS [commit=D]
//	inflight ACTOR TYPE of=LABEL at=MS[-MS] [err=CLASS]
//
// Labels are event ids; under ulid they sort in key order as written,
// under the positioned schemes an event's seq is its label's number (e03:
// 3). write replays what ACTOR has read (its list lines so far) with the
// program and the policies and appends the decisions it derives, one
// append each, in order, as the labels given: a label "-" is a decision
// derived but not committed (the store refused it, or an earlier write of
// the same actor committed it). They are minted 1 ms apart from MS and
// committed D ms (default 1; one D per label, or one for all) after their
// mint; swap=I,J swaps the correlation ids of decisions I and J first (a
// writer whose wake drew them in the other order); view=OTHER derives from
// what OTHER has read instead (a writer with no load of its own). fact
// writes a fact of the operation LABEL created, with the given payload
// (compact JSON; a space or '#' in it written \u0020, \u0023) or a
// made-up one; fail writes run_failed with the detail as its error;
// steps gives each named step a function whose work lasts MS; inflight
// records an append of a fact of LABEL's operation that never committed:
// it started at the first MS and returned at the second (with err's
// class), or not by the run's end.
//
// Execute re-executes a schedule: each write derives its decisions from
// the writer's reads through the engine (engine.Replay) at that point of
// the schedule. Strictly, a write whose writer's view diverges, or that
// derives fewer decisions than its labels, and a read of a label not
// written yet, are errors; leniently (a shrinker's candidates) they commit
// or read what there is.
package schedule
