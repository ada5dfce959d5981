package ingest

import (
	"context"
	"sync/atomic"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Verdicts of the count-index guard.
const (
	verdictPass          = "pass"
	verdictIndeterminate = "indeterminate"
	verdictReject        = "reject"
)

// judge is the legacy count-index guard, evaluated by the handler before
// the write: the writer claims expected events (the count it saw); the
// run's count in Redis is read now, and the write happens later, after the
// drain, with nothing holding the count still in between (the TOCTOU of
// seed gotcha 2). It is one-sided: it allows the write whenever its own
// index cannot prove the writer stale.
//
//   - no count (never started, or expired after the TTL): indeterminate;
//   - count < expected (the index missed appends): indeterminate;
//   - count > expected: reject with an *eventlog.FencedError whose Actual is
//     the count; but when the writer sent a watermark (the last id it saw)
//     that has left the 16-id window, indeterminate, since the window cannot
//     place it;
//   - count == expected: pass.
//
// A Redis that cannot be reached fails with eventlog.ErrUnavailable and
// counts nothing.
func (s *Server) judge(ctx context.Context, runID string, expected int64, watermark string) error {
	n, ok, err := s.cfg.Index.Count(ctx, runID)
	if err != nil {
		return err
	}
	v := verdictPass
	switch {
	case !ok, n < expected:
		v = verdictIndeterminate
	case n > expected:
		v = verdictReject
		if watermark != "" {
			_, found, err := s.cfg.Index.Locate(ctx, runID, watermark)
			if err != nil {
				return err
			}
			if !found {
				v = verdictIndeterminate
			}
		}
	}
	s.counts(runID).add(v)
	if v == verdictReject {
		return &eventlog.FencedError{RunID: runID, Expected: expected, Actual: n}
	}
	return nil
}

// guardCounts are one run's guard tallies; every evaluation ends in exactly
// one of them, so the evaluations are their sum.
type guardCounts struct {
	passed, indeterminate, rejected atomic.Int64
}

func (g *guardCounts) add(verdict string) {
	switch verdict {
	case verdictPass:
		g.passed.Add(1)
	case verdictIndeterminate:
		g.indeterminate.Add(1)
	case verdictReject:
		g.rejected.Add(1)
	}
}

func (g *guardCounts) snapshot() history.GuardCounts {
	c := history.GuardCounts{Passed: g.passed.Load(), Indeterminate: g.indeterminate.Load(), Rejected: g.rejected.Load()}
	c.Evaluated = c.Passed + c.Indeterminate + c.Rejected
	return c
}

// counts returns a run's tallies, creating them on first use.
func (s *Server) counts(runID string) *guardCounts {
	if v, ok := s.guards.Load(runID); ok {
		return v.(*guardCounts)
	}
	v, _ := s.guards.LoadOrStore(runID, &guardCounts{})
	return v.(*guardCounts)
}
