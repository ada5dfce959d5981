package worldtest

import (
	"errors"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// testIdempotency: a store accepts at most one event per idempotency key
// (eventlog.Draft.Keys) and run: a repeat conflicts and writes nothing.
func testIdempotency(t testing.TB, s *suite) {
	hook := func(corr, dedup string) eventlog.Draft {
		d := Draft(eventlog.HookReceived, corr)
		d.Dedup = dedup
		return d
	}
	hookCreated := func(corr, token string) eventlog.Draft {
		d := Draft(eventlog.HookCreated, corr)
		d.Token = token
		return d
	}
	type write struct {
		d        eventlog.Draft
		conflict bool
	}
	tests := []struct {
		name   string
		writes []write
	}{
		{"same_type_and_correlation", []write{
			{d: Draft(eventlog.StepCompleted, "s1")},
			{d: Draft(eventlog.StepCompleted, "s1"), conflict: true},
		}},
		{"same_correlation_other_types", []write{
			{d: Draft(eventlog.StepCreated, "s1")},
			{d: Draft(eventlog.StepStarted, "s1")},
			{d: Draft(eventlog.StepCompleted, "s1")},
		}},
		{"same_type_other_correlation", []write{
			{d: Draft(eventlog.StepCreated, "s1")},
			{d: Draft(eventlog.StepCreated, "s2")},
		}},
		{"hook_received_distinct_dedup", []write{
			{d: hook("h1", "p1")},
			{d: hook("h1", "p2")},
		}},
		{"hook_received_same_dedup", []write{
			{d: hook("h1", "p1")},
			{d: hook("h1", "p1"), conflict: true},
		}},
		{"hook_token_reused", []write{
			{d: hookCreated("h1", "tok")},
			{d: hookCreated("h2", "tok"), conflict: true},
			{d: hookCreated("h2", "tok2")},
		}},
	}
	for _, tt := range tests {
		Run(t, tt.name, func(t testing.TB) {
			var ds []eventlog.Draft
			for _, wr := range tt.writes {
				if why := unkeyed(s.limits, wr.d); wr.conflict && why != "" {
					t.Skipf("the world does not enforce this key: %s", why)
				}
				ds = append(ds, wr.d)
			}
			f := s.fixture(t, eventlog.FenceOnLog)
			var want []eventlog.Event
			writes := tt.writes
			if f.lifecycle() {
				// The writes shaped for the store, after the creation of
				// each entity they address that they do not create.
				writes = slices.Clone(tt.writes)
				for i := range writes {
					writes[i].d = f.shape(writes[i].d)
				}
				for _, d := range f.withCreators(nil, ds...) {
					if !slices.ContainsFunc(writes, func(wr write) bool { return sameDraft(wr.d, d) }) {
						want = append(want, f.append(d)...)
					}
				}
			}
			for i, wr := range writes {
				if shares := sharesKey(wr.d, want); shares != wr.conflict {
					t.Fatalf("write %d: table says conflict=%v but Draft.Keys says %v", i, wr.conflict, shares)
				}
				if !wr.conflict {
					want = append(want, f.append(wr.d)...)
					continue
				}
				evs, err := f.w.Append(f.ctx, f.run, []eventlog.Draft{wr.d})
				if !errors.Is(err, eventlog.ErrConflict) {
					t.Fatalf("write %d: Append(%s %s) = %v; want an error matching %v", i, wr.d.Type, wr.d.CorrelationID, err, eventlog.ErrConflict)
				}
				if len(evs) != 0 {
					t.Fatalf("write %d: a conflicting append returned %d events", i, len(evs))
				}
			}
			f.checkSame("log", f.all(), want)
		})
	}
}

// sharesKey reports whether d claims an idempotency key one of evs holds.
func sharesKey(d eventlog.Draft, evs []eventlog.Event) bool {
	for _, e := range evs {
		for _, k := range e.Draft().Keys() {
			if slices.Contains(d.Keys(), k) {
				return true
			}
		}
	}
	return false
}
