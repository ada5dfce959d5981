package worlds

import (
	"context"
	"errors"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// World is one event-log store under test.
//
// Append writes facts unfenced; AppendFenced writes a batch of decisions all or
// nothing, rejected with an *eventlog.FencedError when the log moved past
// expectedSeq (the number of events the writer loaded). Both return the events
// as committed, with ids, positions (where the scheme has them), MintedAt and
// CommittedAt. List returns up to limit events after the cursor in the run's
// scheme order; under positioned schemes it asserts density and fails with
// eventlog.ErrGap or eventlog.ErrDuplicate.
type World interface {
	CreateRun(ctx context.Context, r eventlog.Run) error
	Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error)
	AppendFenced(ctx context.Context, runID string, expectedSeq int64, d []eventlog.Draft) ([]eventlog.Event, error)
	List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error)
	Close() error
}

// CommitTime is a store-side commit time of one event.
type CommitTime struct {
	EventID string
	Seq     int64
	// At is the commit time; Source says who observed it ("store" for a
	// database commit timestamp, "world" for the world's own clock).
	At     time.Time
	Source string
}

// CommitTimes is implemented by worlds that can say when each event committed.
type CommitTimes interface {
	CommitTimes(ctx context.Context, runID string) ([]CommitTime, error)
}

// Keeper is implemented by worlds that can say what they leave on a server
// when opened to keep their data (storm --keep), so that the user can find
// it afterwards: "" when nothing stays (no keep, or only embedded servers,
// which go at exit regardless).
type Keeper interface {
	Kept() string
}

// SelfChecker is implemented by worlds that can tell, while a storm uses
// them, that they no longer do what they were opened to do (a devkit
// world whose mint-to-commit window the package no longer lets the sidecar
// spend). A storm asks after each run it records and stops with the error.
type SelfChecker interface {
	SelfCheck() error
}

// Resetter is implemented by worlds that can drop their whole namespace:
// every run is gone and the world stays usable (the conformance suite,
// worlds/worldtest, checks both).
type Resetter interface {
	Reset(ctx context.Context) error
}

// Options configure a world instance for one storm cell.
type Options struct {
	// Dir is a directory the world may use for its namespace (local world).
	Dir string
	// Latency shapes the mint-to-commit window of each write (nil: none,
	// ProfileOrNone).
	Latency Profile
	// Seed seeds any randomness the world draws (ULID entropy).
	Seed uint64
	// Nemesis opens the world for fault injection (storm --nemesis): it
	// connects through loopback proxies and offers its fault targets
	// (nemesis.Targeter). A world with an endpoint off this machine's
	// loopback refuses to open.
	Nemesis bool
	// PoolSize is the connections the world's pool may hold, for a world
	// that declares Entry.Connections (0: the world's own default).
	PoolSize int32
}

// Dumper is implemented by worlds that can return every stored event of a
// run in scheme order without the density assertion, so forensics can count
// the gaps and duplicates a reader would refuse.
type Dumper interface {
	Dump(ctx context.Context, runID string) ([]eventlog.Event, error)
}

// GuardCounter is implemented by worlds that apply a legacy interim guard
// (eventlog.Run.Guard).
type GuardCounter interface {
	GuardCounts(ctx context.Context, runID string) (history.GuardCounts, error)
}

// Reservation is slots a write holds under eventlog.SchemeSlot: positions
// First … First+len(Drafts)-1 of the run, taken (with the drafts'
// idempotency keys) at ReservedAt and not yet committed.
type Reservation struct {
	RunID      string
	First      int64
	Drafts     []eventlog.Draft
	ReservedAt time.Time
}

// Slotter is implemented by worlds that support eventlog.SchemeSlot (the
// conformance suite's slot tests in worlds/worldtest/slot.go are its
// executable spec). Under that scheme:
//
//   - Append is Reserve, the write's latency window (Latency.Delay, the
//     batch's max, spent with SpendWindow), then Commit. A writer whose context
//     ends in the window returns the context's error and leaves its slots
//     reserved and empty, without cleaning up: a hole only a seal fills.
//   - AppendFenced is the same, fenced on the reservation counter at Reserve
//     time, atomically with it: when the run's slot counter (reserved slots,
//     committed or not) is not expectedSeq it fails with an
//     *eventlog.FencedError{Expected, Actual: counter} and takes nothing.
//     The FenceOnDecisions basis does not apply (treated as FenceOnLog).
//   - List returns committed events (noops included) with Seq > after.Seq in
//     slot order, ids eventlog.SlotID(Seq), and fails with the
//     eventlog.CheckSlots error of its page: a *eventlog.HoleError when a
//     slot is empty below a committed one. Empty slots at the tail, with
//     nothing committed above them, are not a hole: the page ends there.
//   - Dump returns every committed event and noop in slot order, holes and
//     all; CommitTimes as for the other positioned schemes.
//   - Readers never see a reservation; other writers and sealers do.
type Slotter interface {
	// Reserve takes the run's next len(d) slots for d and claims d's
	// idempotency keys, atomically; a taken key fails it with an
	// *eventlog.ConflictError before any slot is taken. Nothing is visible
	// to readers yet.
	Reserve(ctx context.Context, runID string, d []eventlog.Draft) (Reservation, error)
	// Commit makes a reservation's events visible at their slots, all or
	// nothing. If any of its slots was sealed meanwhile it commits nothing,
	// seals the rest of its slots itself (so it leaves no hole) and fails
	// with an *eventlog.SealedError.
	Commit(ctx context.Context, r Reservation) ([]eventlog.Event, error)
	// Seal fills the run's slot with an eventlog.Noop if it is reserved and
	// still empty, releasing the keys its reservation claimed, and returns
	// the noop (sealed true). A slot that has committed is left alone
	// (sealed false, nil error). A slot never reserved is an error.
	Seal(ctx context.Context, runID string, slot int64) (noop eventlog.Event, sealed bool, err error)
}

// Limits are what a world cannot do of what the contract of its schemes
// asks, each with the reason (Entry.Limits). A world that runs a real
// implementation as it is (the devkit worlds, which run the Workflow
// DevKit's own packages) has them; the conformance suite skips, with the
// reason, the parts a world declares it cannot do, and checks the rest.
// Empty reasons mean the world can.
type Limits struct {
	// Fence: AppendFenced is refused, so a storm runs on the world only the
	// conditions whose fence knob is none (the one policy that never calls
	// it); every other fence policy needs it.
	Fence string
	// Lifecycle: events must follow their entity's lifecycle (a step's
	// step_created before its step_started, nothing after its run's end) and
	// carry payloads only where the store keeps them, so the suite writes
	// drafts of that shape (worldtest: lifecycle drafts).
	Lifecycle string
	// Unkeyed lists idempotency keys (by their first segment, as in
	// eventlog.Draft.Keys: an event type, or "hook_token") the world does
	// not enforce.
	Unkeyed map[string]string
	// Types lists event types the world cannot store.
	Types map[eventlog.Type]string
	// Bare lists event types the world stores without a payload (a
	// contract whose schema has no data for them), by reason: the suite
	// writes them bare in lifecycle drafts.
	Bare map[eventlog.Type]string
	// CommitClock: the world's CommitTimes come from a clock coarser than
	// the mint and append times they are checked against (a filesystem's),
	// so they may fall a little outside them; their order still holds.
	CommitClock string
}

// ErrPrerequisite is matched (errors.Is) by the errors that say this
// machine lacks what a world needs to run at all (no PostgreSQL server
// binaries, no node, packages npm could not install, a package version
// whose mint-to-commit window cannot be spent): infrastructure (exit 3),
// never the store's behaviour. A world package makes its own sentinel
// match it with Prerequisite.
var ErrPrerequisite = errors.New("a world's prerequisite is missing")

// Prerequisite returns a sentinel error with text that errors.Is matches
// against itself and against ErrPrerequisite.
func Prerequisite(text string) error { return &prerequisite{text: text} }

type prerequisite struct{ text string }

func (e *prerequisite) Error() string { return e.text }

// Is matches ErrPrerequisite.
func (e *prerequisite) Is(target error) bool { return target == ErrPrerequisite }
