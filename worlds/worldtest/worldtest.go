package worldtest

import (
	"fmt"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
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

// Opener opens a fresh, empty world with opts and registers its cleanup
// with t (closing it; the suite may have closed it already, so Close must
// be safe to call twice).
type Opener func(t *testing.T, opts worlds.Options) worlds.World

// suite is one scheme's run of the conformance suite.
type suite struct {
	scheme eventlog.Scheme
	contract
	openWith func(testing.TB, worlds.Options) worlds.World
	// limits are the world's (worlds.Entry.Limits): what it cannot do.
	limits worlds.Limits
	// hookClaims: the world indexes hook tokens across runs
	// (worlds.Entry.HookClaims).
	hookClaims bool
}

// open opens a fresh world with the suite's default options: a directory
// of its own (t.TempDir) and no latency.
func (s *suite) open(t testing.TB) worlds.World {
	t.Helper()
	return s.openWith(t, s.options(t))
}

// options are the Options every world of the suite is opened with.
func (s *suite) options(t testing.TB) worlds.Options {
	return worlds.Options{Dir: t.TempDir(), Seed: 1}
}

// Exercise runs the conformance suite against the world entry describes,
// once per scheme in entry.Schemes, and checks the optional abilities
// (worlds.Dumper, worlds.CommitTimes, worlds.Resetter, a latency window
// drawn from Options.Latency) on the worlds that have them. What
// entry.Limits declares the world cannot do is skipped, saying why. Every subtest
// opens a fresh world through open, with Options carrying a directory of
// its own (t.TempDir) and a seed. A scheme's checks run in parallel with
// each other, after its stress checks (many writers at once), which run
// alone; the schemes run one after another. open may be nil: the suite then opens through entry.Open and closes the
// world when the subtest ends.
func Exercise(t *testing.T, entry worlds.Entry, open Opener) {
	t.Helper()
	if len(entry.Schemes) == 0 {
		t.Fatalf("worldtest: world %q lists no scheme", entry.Name)
	}
	if open == nil {
		open = OpenEntry(entry)
	}
	for _, name := range entry.Schemes {
		scheme := eventlog.Scheme(name)
		c, ok := contracts[scheme]
		if !ok {
			t.Fatalf("worldtest: world %q lists scheme %q, which has no conformance contract", entry.Name, name)
		}
		c.positioned = scheme.Positioned()
		s := &suite{scheme: scheme, contract: c, limits: entry.Limits, hookClaims: entry.HookClaims,
			openWith: func(t testing.TB, opts worlds.Options) worlds.World { return open(t.(*testing.T), opts) }}
		t.Run(name, func(t *testing.T) {
			for _, tt := range s.tests() {
				t.Run(tt.name, func(t *testing.T) {
					if !tt.alone {
						t.Parallel()
					}
					tt.run(t, s)
				})
			}
		})
	}
}

// Check is one named check of the suite for a runner other than go test
// (stormctl certify): Run runs it on a testing.TB of the runner's, which
// must end the check's goroutine on FailNow and SkipNow
// (runtime.Goexit) and implement Runner for the check's subtests.
type Check struct {
	Scheme eventlog.Scheme
	Name   string
	// Alone: the check keeps the machine's cores busy by itself.
	Alone bool
	Run   func(t testing.TB)
}

// Runner is implemented by a runner's testing.TB that runs subtests
// (Run): Sub runs f as subtest name of t and says whether it passed.
type Runner interface {
	Sub(name string, f func(testing.TB)) bool
}

// Run runs f as subtest name of t: t.Run for a *testing.T, Sub for a
// Runner's testing.TB.
func Run(t testing.TB, name string, f func(testing.TB)) bool {
	switch r := t.(type) {
	case *testing.T:
		return r.Run(name, func(t *testing.T) { f(t) })
	case Runner:
		return r.Sub(name, f)
	}
	t.Fatalf("worldtest: %T runs no subtests", t)
	return false
}

// Checks lists the suite's checks of the world entry describes, per
// scheme in entry.Schemes, as Exercise runs them, each opening its worlds
// with open (the runner's: it registers their Close with t.Cleanup).
func Checks(entry worlds.Entry, open func(t testing.TB, opts worlds.Options) worlds.World) ([]Check, error) {
	var out []Check
	for _, name := range entry.Schemes {
		scheme := eventlog.Scheme(name)
		c, ok := contracts[scheme]
		if !ok {
			return nil, fmt.Errorf("worldtest: world %q lists scheme %q, which has no conformance contract", entry.Name, name)
		}
		c.positioned = scheme.Positioned()
		s := &suite{scheme: scheme, contract: c, openWith: open, limits: entry.Limits, hookClaims: entry.HookClaims}
		for _, tt := range s.tests() {
			out = append(out, Check{Scheme: scheme, Name: tt.name, Alone: tt.alone, Run: func(t testing.TB) { tt.run(t, s) }})
		}
	}
	return out, nil
}

// subtest is one named check of the suite.
type subtest struct {
	name string
	run  func(testing.TB, *suite)
	// alone: the check keeps the machine's cores busy by itself (many
	// writers at once), so it runs before the scheme's other checks start,
	// which then run in parallel with each other. Running it beside them
	// would only make them contend for the cores.
	alone bool
}

// tests lists the suite's checks for its scheme.
func (s *suite) tests() []subtest {
	tests := []subtest{
		{name: "fields", run: testFields},
		{name: "ordering", run: testOrdering},
		{name: "pagination", run: testPagination},
		{name: "cursor_resume", run: testCursorResume},
		{name: "density", run: testDensity},
		{name: "fenced_batch", run: testFencedBatch},
		{name: "fence_basis", run: testFenceBasis},
		{name: "idempotency", run: testIdempotency},
		{name: "concurrent_appenders", run: testConcurrentAppenders, alone: true},
		{name: "unknown_run", run: testUnknownRun},
		{name: "closed_world", run: testClosedWorld},
		{name: "cancelled_window", run: testCancelledWindow},
		{name: "dump", run: testDump},
		{name: "commit_times", run: testCommitTimes},
		{name: "reset", run: testReset},
	}
	switch {
	case !s.hookClaims:
	case (eventlog.Run{Scheme: s.scheme, HookClaim: eventlog.HookClaimForce}).CheckHookClaim() == nil:
		tests = append(tests, []subtest{
			{name: "hook_claim", run: testHookClaim},
			{name: "hook_claim_race", run: testHookClaimRace},
		}...)
	default:
		tests = append(tests, subtest{name: "hook_claim_refused", run: testHookClaimRefused})
	}
	if s.slots {
		tests = append(tests, []subtest{
			{name: "slot_ids", run: testSlotIDs},
			{name: "slot_hole", run: testSlotHole},
			{name: "slot_seal", run: testSlotSeal},
			{name: "slot_seal_batch", run: testSlotSealBatch},
			{name: "slot_reserve_conflict", run: testSlotReserveConflict},
			{name: "slot_seal_race", run: testSlotSealRace, alone: true},
			{name: "in_band", run: testInBand},
		}...)
	}
	return tests
}

// OpenEntry is the Opener of a world that needs nothing but its entry:
// it opens through entry.Open with t's context and closes the world when t
// ends, failing t if Close does.
func OpenEntry(entry worlds.Entry) Opener {
	return func(t *testing.T, opts worlds.Options) worlds.World {
		t.Helper()
		w, err := entry.Open(t.Context(), opts)
		if err != nil {
			t.Fatalf("open world %q: %v", entry.Name, err)
		}
		t.Cleanup(func() {
			if err := w.Close(); err != nil {
				t.Errorf("close world %q: %v", entry.Name, err)
			}
		})
		return w
	}
}
