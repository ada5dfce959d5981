package worldtest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// operation is one call on a run of the fixture's world, named for
// failure messages.
type operation struct {
	name string
	call func() error
}

// operations are the calls on runID that touch it: the World's writes and
// read, and those of the optional abilities the world has.
func (f *fixture) operations(runID string) []operation {
	d := []eventlog.Draft{Draft(eventlog.StepCreated, "x")}
	ops := []operation{
		{"Append", func() error { _, err := f.w.Append(f.ctx, runID, d); return err }},
		{"AppendFenced", func() error { _, err := f.w.AppendFenced(f.ctx, runID, 0, d); return err }},
		{"List", func() error { _, err := f.w.List(f.ctx, runID, eventlog.Cursor{}, 10); return err }},
	}
	if dw, ok := worlds.Inner(f.w).(worlds.Dumper); ok {
		ops = append(ops, operation{"Dump", func() error { _, err := dw.Dump(f.ctx, runID); return err }})
	}
	if ct, ok := worlds.Inner(f.w).(worlds.CommitTimes); ok {
		ops = append(ops, operation{"CommitTimes", func() error { _, err := ct.CommitTimes(f.ctx, runID); return err }})
	}
	return ops
}

// ability returns the world as a T (an optional ability), skipping t when
// it is not one.
func ability[T any](t testing.TB, w worlds.World) T {
	t.Helper()
	a, ok := worlds.Inner(w).(T)
	if !ok {
		t.Skipf("%T is not a %v", w, reflect.TypeFor[T]())
	}
	return a
}

// testUnknownRun: every operation on a run the world never created fails
// with eventlog.ErrNoRun, even when other runs exist.
func testUnknownRun(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	f.append(f.withCreators(nil, Draft(eventlog.StepCompleted, "other"))...)
	for _, op := range f.operations("wrun_" + ulid.Make().String()) {
		Run(t, op.name, func(t testing.TB) {
			if err := op.call(); !errors.Is(err, eventlog.ErrNoRun) {
				t.Fatalf("%s on an unknown run = %v; want an error matching %v", op.name, err, eventlog.ErrNoRun)
			}
		})
	}
}

// testClosedWorld: a closed world refuses every operation with an error,
// and a second Close is harmless.
func testClosedWorld(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	f.append(f.withCreators(nil, Draft(eventlog.StepCompleted, "before"))...)
	if err := f.w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ops := append(f.operations(f.run), operation{"CreateRun", func() error {
		return f.w.CreateRun(f.ctx, eventlog.Run{ID: "wrun_" + ulid.Make().String(), Scheme: s.scheme})
	}})
	for _, op := range ops {
		if err := op.call(); err == nil {
			t.Errorf("%s on a closed world succeeded", op.name)
		}
	}
	if err := f.w.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
