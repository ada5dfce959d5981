package worldtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// slotter returns the fixture's world as a worlds.Slotter, failing the test
// when it is not one (a world that lists the slot scheme must be).
func (f *fixture) slotter() worlds.Slotter {
	f.t.Helper()
	sl, ok := worlds.Inner(f.w).(worlds.Slotter)
	if !ok {
		f.t.Fatalf("%T lists the slot scheme but is not a worlds.Slotter", f.w)
	}
	return sl
}

// reserve takes slots for drafts and checks the reservation.
func (f *fixture) reserve(want int64, d ...eventlog.Draft) worlds.Reservation {
	f.t.Helper()
	r, err := f.slotter().Reserve(f.ctx, f.run, d)
	if err != nil {
		f.t.Fatalf("Reserve(%d drafts): %v", len(d), err)
	}
	if r.RunID != f.run || r.First != want || len(r.Drafts) != len(d) || r.ReservedAt.IsZero() {
		f.t.Fatalf("Reserve(%d drafts) = {RunID %q, First %d, %d drafts, ReservedAt %v}; want {%q, %d, %d, set}",
			len(d), r.RunID, r.First, len(r.Drafts), r.ReservedAt, f.run, want, len(d))
	}
	return r
}

// wantHole asserts a read after cursor refuses the log at an empty slot.
func (f *fixture) wantHole(after int64, slot, above int64) {
	f.t.Helper()
	_, err := f.w.List(f.ctx, f.run, eventlog.Cursor{Seq: after}, 100)
	var he *eventlog.HoleError
	if !errors.As(err, &he) || !errors.Is(err, eventlog.ErrHole) {
		f.t.Fatalf("List(after %d) = %v; want a HoleError at slot %d", after, err, slot)
	}
	if he.RunID != f.run || he.Slot != slot || he.Above != above {
		f.t.Fatalf("HoleError{RunID %q, Slot %d, Above %d}, want {%q, %d, %d}", he.RunID, he.Slot, he.Above, f.run, slot, above)
	}
}

// dump reads the stored log without the density assertion.
func (f *fixture) dump() []eventlog.Event {
	f.t.Helper()
	d, ok := worlds.Inner(f.w).(worlds.Dumper)
	if !ok {
		f.t.Fatalf("%T is not a worlds.Dumper", f.w)
	}
	evs, err := d.Dump(f.ctx, f.run)
	if err != nil {
		f.t.Fatalf("Dump: %v", err)
	}
	return evs
}

// seqs renders a log's positions and types for failure messages.
func seqs(evs []eventlog.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = fmt.Sprintf("%d:%s", e.Seq, e.Type)
	}
	return out
}

// testSlotIDs: every event's id is its slot, dense from 1, batches at
// consecutive slots.
func testSlotIDs(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	f.append(mix("a", 3)...)
	f.append(Draft(eventlog.StepCompleted, "b"))
	for i, e := range f.all() {
		if want := eventlog.SlotID(int64(i + 1)); e.ID != want || e.Seq != int64(i+1) {
			t.Fatalf("event %d: id %s seq %d, want id %s seq %d", i, e.ID, e.Seq, want, i+1)
		}
	}
}

// testSlotHole: a reservation left uncommitted below a committed event is a
// hole: a read across it fails with a HoleError, a read that stops before it
// does not, Dump shows the committed events around it, and once the
// reservation commits the log is dense.
func testSlotHole(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	base := f.append(Draft(eventlog.RunCreated, ""), Draft(eventlog.StepCreated, "a"))
	r := f.reserve(3, Draft(eventlog.StepCompleted, "a"))
	late := f.append(Draft(eventlog.HookReceived, "h"))
	if late[0].Seq != 4 {
		t.Fatalf("append after a reservation of slot 3 committed at %d, want 4", late[0].Seq)
	}
	f.wantHole(0, 3, 4)
	f.wantHole(2, 3, 4)
	if p := f.list(eventlog.Cursor{}, 2); len(p.Events) != 2 {
		t.Fatalf("List(limit 2) before the hole returned %d events, want 2", len(p.Events))
	}
	if got := f.dump(); len(got) != 3 || got[2].Seq != 4 {
		t.Fatalf("Dump with slot 3 empty = %v, want slots 1, 2, 4", seqs(got))
	}
	evs, err := f.slotter().Commit(f.ctx, r)
	if err != nil {
		t.Fatalf("Commit of slot 3: %v", err)
	}
	f.checkWritten(r.Drafts, evs)
	if evs[0].Seq != 3 || evs[0].ID != eventlog.SlotID(3) {
		t.Fatalf("committed at %s@%d, want slot 3", evs[0].ID, evs[0].Seq)
	}
	all := f.all()
	if len(all) != 4 || all[2].Type != eventlog.StepCompleted || all[3].ID != late[0].ID {
		t.Fatalf("log after the commit = %v, want run_created, step_created, step_completed, hook_received", seqs(all))
	}
	_ = base
}

// testSlotSeal: a seal fills an empty slot with a noop that records the
// reservation time and the sealer; the late commit of that slot is void
// (SealedError, nothing visible) and its keys are free again; sealing a
// committed or already sealed slot changes nothing; sealing a slot never
// reserved is an error.
func testSlotSeal(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	f.append(Draft(eventlog.RunCreated, ""), Draft(eventlog.StepCreated, "a"))
	d := Draft(eventlog.StepCompleted, "a")
	r := f.reserve(3, d)
	f.append(Draft(eventlog.HookReceived, "h"))
	ctx := worlds.WithActor(f.ctx, "inv-7")
	noop, sealed, err := f.slotter().Seal(ctx, f.run, 3)
	if err != nil || !sealed {
		t.Fatalf("Seal(3) = sealed %v, %v; want a seal", sealed, err)
	}
	if noop.Type != eventlog.Noop || noop.Seq != 3 || noop.ID != eventlog.SlotID(3) || noop.RunID != f.run {
		t.Fatalf("Seal(3) wrote %+v, want a noop at slot 3", noop)
	}
	f.checkEvent(noop)
	var p eventlog.NoopPayload
	if err := json.Unmarshal(noop.Payload, &p); err != nil {
		t.Fatalf("noop payload %s: %v", noop.Payload, err)
	}
	if p.SealedBy != "inv-7" || p.ReservedAt.Sub(r.ReservedAt).Abs() > time.Millisecond {
		t.Fatalf("noop payload %+v, want sealedBy inv-7 and reservedAt %v", p, r.ReservedAt)
	}
	want := f.all()
	if len(want) != 4 || want[2].Type != eventlog.Noop {
		t.Fatalf("log after the seal = %v, want a noop at slot 3", seqs(want))
	}
	_, err = f.slotter().Commit(f.ctx, r)
	var se *eventlog.SealedError
	if !errors.As(err, &se) || !errors.Is(err, eventlog.ErrSealed) || se.Slot != 3 || se.RunID != f.run {
		t.Fatalf("Commit of a sealed slot = %v, want a SealedError for slot 3", err)
	}
	f.checkSame("log after the void commit", f.all(), want)
	for _, slot := range []int64{3, 4} {
		if _, sealed, err := f.slotter().Seal(f.ctx, f.run, slot); sealed || err != nil {
			t.Fatalf("Seal(%d) of a filled slot = sealed %v, %v; want no seal and no error", slot, sealed, err)
		}
	}
	if _, _, err := f.slotter().Seal(f.ctx, f.run, 99); err == nil {
		t.Fatalf("Seal(99) of a slot never reserved: no error")
	}
	again := f.append(d)
	if again[0].Seq != 5 {
		t.Fatalf("re-append of the sealed write's draft committed at %d, want 5 (its key released)", again[0].Seq)
	}
}

// testSlotSealBatch: a batch whose first slot was sealed commits nothing and
// seals its other slots itself, so it leaves no hole.
func testSlotSealBatch(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	f.append(Draft(eventlog.RunCreated, ""))
	r := f.reserve(2, decisions("b", 2)...)
	f.append(Draft(eventlog.StepCompleted, "x"))
	if _, sealed, err := f.slotter().Seal(f.ctx, f.run, 2); !sealed || err != nil {
		t.Fatalf("Seal(2) = %v, %v", sealed, err)
	}
	if _, err := f.slotter().Commit(f.ctx, r); !errors.Is(err, eventlog.ErrSealed) {
		t.Fatalf("Commit of a half-sealed batch = %v, want ErrSealed", err)
	}
	all := f.all()
	if len(all) != 4 || all[1].Type != eventlog.Noop || all[2].Type != eventlog.Noop {
		t.Fatalf("log = %v, want run_created, noop, noop, step_completed", seqs(all))
	}
}

// testSlotReserveConflict: a reservation whose key is taken (committed or
// held by another reservation) fails with a ConflictError and takes no slot.
func testSlotReserveConflict(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	f.append(Draft(eventlog.StepCreated, "a"))
	held := f.reserve(2, Draft(eventlog.StepCreated, "b"))
	for _, d := range []eventlog.Draft{Draft(eventlog.StepCreated, "a"), Draft(eventlog.StepCreated, "b")} {
		if _, err := f.slotter().Reserve(f.ctx, f.run, []eventlog.Draft{d}); !errors.Is(err, eventlog.ErrConflict) {
			t.Fatalf("Reserve of taken key %s = %v, want ErrConflict", d.CorrelationID, err)
		}
	}
	f.reserve(3, Draft(eventlog.StepCreated, "c"))
	if _, err := f.slotter().Commit(f.ctx, held); err != nil {
		t.Fatalf("Commit of slot 2: %v", err)
	}
}

// testSlotSealRace: a seal and the commit of the same slot race; exactly
// one wins, and the slot holds exactly one event, never both.
func testSlotSealRace(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	const rounds = 40
	commits, seals := 0, 0
	for i := range rounds {
		r := f.reserve(int64(i+1), Draft(eventlog.StepCompleted, fmt.Sprintf("r%02d", i)))
		var (
			wg      sync.WaitGroup
			cerr    error
			sealed  bool
			sealErr error
		)
		wg.Add(2)
		go func() { defer wg.Done(); _, cerr = f.slotter().Commit(f.ctx, r) }()
		go func() { defer wg.Done(); _, sealed, sealErr = f.slotter().Seal(f.ctx, f.run, r.First) }()
		wg.Wait()
		switch {
		case sealErr != nil:
			t.Fatalf("round %d: Seal: %v", i, sealErr)
		case cerr == nil && !sealed:
			commits++
		case errors.Is(cerr, eventlog.ErrSealed) && sealed:
			seals++
		default:
			t.Fatalf("round %d: commit %v and sealed %v: want exactly one winner", i, cerr, sealed)
		}
	}
	all := f.all()
	if len(all) != rounds {
		t.Fatalf("log holds %d events after %d races, want %d", len(all), rounds, rounds)
	}
	if d := f.dump(); len(d) != rounds {
		t.Fatalf("Dump holds %d events after %d races, want %d (a seal and a commit both visible)", len(d), rounds, rounds)
	}
	t.Logf("%d commits won, %d seals won", commits, seals)
}
