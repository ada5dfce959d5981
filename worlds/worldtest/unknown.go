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
	f.append(f.withCreators(nil, draft(eventlog.StepCompleted, "other"))...)
	missing := "wrun_" + ulid.Make().String()
	d := []eventlog.Draft{draft(eventlog.StepCreated, "x")}
	tests := []struct {
		name   string
		fenced bool
		call   func() error
	}{
		{"append", false, func() error { _, err := f.w.Append(f.ctx, missing, d); return err }},
		{"append_fenced", true, func() error { _, err := f.w.AppendFenced(f.ctx, missing, 0, d); return err }},
		{"list", false, func() error { _, err := f.w.List(f.ctx, missing, eventlog.Cursor{}, 10); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fenced && f.limits.Fence != "" {
				t.Skipf("the world has no fenced append: %s", f.limits.Fence)
			}
			if err := tt.call(); !errors.Is(err, eventlog.ErrNoRun) {
				t.Fatalf("%s on an unknown run = %v; want an error matching %v", tt.name, err, eventlog.ErrNoRun)
			}
		})
	}
}
