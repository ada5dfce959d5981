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
//	start LABEL at=MS [by=ACTOR] [implicit] [commit=D] [payload=JSON]
//	                                    the starter (or ACTOR) writes run_created (the run's input; none: null)
//	list ACTOR after=LABEL|- at=MS[-MS] [more] [snapshot] read=LABEL,...|-
//	listerr ACTOR after=LABEL|- at=MS [more] err=hole|gap [slot=N above=M]
//	write ACTOR LABEL,... at=MS [implicit] [commit=D,...] [swap=I,J] [view=ACTOR]
//	fact ACTOR LABEL TYPE of=LABEL at=MS [implicit] [commit=D] [dedup=X] [payload=JSON]
//	fail ACTOR LABEL at=MS [implicit] [commit=D]
//	inflight ACTOR TYPE of=LABEL at=MS[-MS] [err=CLASS]
//
// A word a line's kind does not take, a flag (more, snapshot, implicit)
// with a value, a key without one, and a word given twice are errors.
//
// Labels are event ids; under ulid they sort in key order as written,
// under the positioned schemes an event's seq is its label's number (e03:
// 3). A list line is one page ACTOR read, or with snapshot the events a
// write's answer carried (history.Op.Snapshot: a load by itself). write
// replays what ACTOR holds with the program and the policies: its list
// lines grouped into loads (forensics.Loads: a load ends at a page
// without more; one still open is not held) and taken load by load as
// explain rebuilds a writer's view (forensics.Held): a load from the
// start (after=-: a reload, a run_started's preload) replaces what it
// held, a load from a cursor adds its events, an event read twice is
// held once. It appends the decisions it derives, one append each, in
// order, as the labels given: a label "-" is a decision
// derived but not committed (the store refused it, or an earlier write of
// the same actor committed it). They are minted 1 ms apart from MS and
// committed D ms (default 1; one D per label, or one for all) after their
// mint; swap=I,J swaps the correlation ids of decisions I and J first (a
// writer whose wake drew them in the other order); view=OTHER derives from
// what OTHER holds instead (a writer with no load of its own). fact
// writes a fact of the operation LABEL created, with the given payload
// (compact JSON; a space or '#' in it written \u0020, \u0023) or a
// made-up one; fail writes run_failed with the detail as its error;
// steps gives each named step a function whose work lasts MS; inflight
// records an append of a fact of LABEL's operation that never committed:
// it started at the first MS and returned at the second (with err's
// class), or not by the run's end. implicit records what a start, write,
// fact or fail writes as appends the store made inside another call of
// its actor (history.Op.Implicit: a 5.0 package's synthetic step_created
// inside a step_started, written just before it at the same time; a
// missing run_created inside a run_started, start ... by=inv-N implicit).
//
// Execute re-executes a schedule: each write derives its decisions from
// what the writer holds through the engine (engine.Replay) at that point of
// the schedule. Strictly, a write whose writer's view diverges, or that
// derives fewer decisions than its labels, and a read of a label not
// written yet, are errors; leniently (a shrinker's candidates) they commit
// or read what there is.
package schedule
