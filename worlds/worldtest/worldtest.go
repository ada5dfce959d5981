package worldtest

import (
	"testing"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// contract is what the suite expects of a scheme.
type contract struct {
	// positioned: events carry a seq, dense from 1, that orders and cursors
	// them; otherwise the id does and seq is zero (Scheme.Positioned).
	positioned bool
	// fenceBasis: the fence honours eventlog.FenceOnDecisions.
	fenceBasis bool
	// gapsInFlight: while writes overlap, a read may find a hole (a lower
	// position drawn but not yet committed) and fail with eventlog.ErrGap;
	// once they are done the log is dense. That is the defect the sequence
	// scheme exists to show (seed gotcha 1), so the concurrent subtest
	// tolerates and counts such reads instead of failing on them.
	gapsInFlight bool
	// slots: the slot scheme: ids are slots, reads refuse holes with
	// eventlog.ErrHole (in flight, tolerated like gapsInFlight's gaps), and
	// the world is a worlds.Slotter (reserve, commit, seal).
	slots bool
}

var contracts = map[eventlog.Scheme]contract{
	eventlog.SchemeULID:     {},
	eventlog.SchemeSeq:      {fenceBasis: true},
	eventlog.SchemeSequence: {gapsInFlight: true},
	eventlog.SchemeSlot:     {gapsInFlight: true, slots: true},
}

// suite is one scheme's run of the conformance suite.
type suite struct {
	scheme eventlog.Scheme
	contract
	open func(t *testing.T) worlds.World
	// limits are the world's, once a fixture has opened one (subtests run
	// one at a time): a subtest the world cannot do is skipped before it
	// opens another.
	limits *worlds.Limits
}

// Exercise runs the conformance suite against a world under one ordering
// scheme. open must return a fresh, empty world and register its cleanup
// with t; every subtest calls it once.
func Exercise(t *testing.T, scheme eventlog.Scheme, open func(t *testing.T) worlds.World) {
	t.Helper()
	c, ok := contracts[scheme]
	if !ok {
		t.Fatalf("worldtest: scheme %q has no conformance contract", scheme)
	}
	c.positioned = scheme.Positioned()
	s := &suite{scheme: scheme, contract: c, open: open}
	tests := []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"fields", testFields},
		{"ordering", testOrdering},
		{"pagination", testPagination},
		{"cursor_resume", testCursorResume},
		{"density", testDensity},
		{"fenced_batch", testFencedBatch},
		{"fence_basis", testFenceBasis},
		{"idempotency", testIdempotency},
		{"concurrent_appenders", testConcurrentAppenders},
		{"unknown_run", testUnknownRun},
	}
	if c.slots {
		tests = append(tests, []struct {
			name string
			run  func(*testing.T, *suite)
		}{
			{"slot_ids", testSlotIDs},
			{"slot_hole", testSlotHole},
			{"slot_seal", testSlotSeal},
			{"slot_seal_batch", testSlotSealBatch},
			{"slot_reserve_conflict", testSlotReserveConflict},
			{"slot_seal_race", testSlotSealRace},
		}...)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, s) })
	}
}
