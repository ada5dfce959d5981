package worldtest

import (
	"errors"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/eventlog"
)

// testUnknownRun: every operation on a run the world never created fails with
// eventlog.ErrNoRun, even when other runs exist.
func testUnknownRun(t *testing.T, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	f.append(Draft(eventlog.StepCompleted, "other"))
	missing := "wrun_" + ulid.Make().String()
	d := []eventlog.Draft{Draft(eventlog.StepCreated, "x")}
	tests := []struct {
		name string
		call func() error
	}{
		{"append", func() error { _, err := f.w.Append(f.ctx, missing, d); return err }},
		{"append_fenced", func() error { _, err := f.w.AppendFenced(f.ctx, missing, 0, d); return err }},
		{"list", func() error { _, err := f.w.List(f.ctx, missing, eventlog.Cursor{}, 10); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, eventlog.ErrNoRun) {
				t.Fatalf("%s on an unknown run = %v; want an error matching %v", tt.name, err, eventlog.ErrNoRun)
			}
		})
	}
}
