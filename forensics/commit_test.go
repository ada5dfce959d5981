package forensics

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// naiveCommitOrder is the O(n^2) definition the fast path must match.
func naiveCommitOrder(evs []CommitEvent) (int, map[TypePair]PairStat) {
	pairs := map[TypePair]PairStat{}
	n := 0
	for _, a := range evs {
		for _, b := range evs {
			if a.ID < b.ID && a.CommitAt.After(b.CommitAt) {
				n++
				p := TypePair{Overtaking: b.Type, Overtaken: a.Type}
				s := pairs[p]
				s.Count++
				d := a.CommitAt.Sub(b.CommitAt)
				s.sum += d
				s.MaxDelta = max(s.MaxDelta, d)
				pairs[p] = s
			}
		}
	}
	for k, v := range pairs {
		v.MeanDelta = v.sum / time.Duration(v.Count)
		pairs[k] = v
	}
	return n, pairs
}

func TestCommitOrderMatchesTheDefinition(t *testing.T) {
	t.Parallel()
	types := []eventlog.Type{eventlog.StepCreated, eventlog.HookReceived, eventlog.StepCompleted}
	base := time.Date(2026, 7, 29, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 1 + rng.IntN(60)
		evs := make([]CommitEvent, n)
		for i := range evs {
			evs[i] = CommitEvent{
				ID:       fmt.Sprintf("wevt_%04d", i),
				Type:     types[rng.IntN(len(types))],
				CommitAt: base.Add(time.Duration(i)*time.Millisecond + time.Duration(rng.IntN(40))*time.Millisecond),
			}
		}
		rng.Shuffle(n, func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
		got := AnalyzeCommitOrder(evs, false)
		want, wantPairs := naiveCommitOrder(evs)
		if got.InvertedPairs != want {
			t.Fatalf("seed %d: %d inverted pairs, want %d", seed, got.InvertedPairs, want)
		}
		if len(got.Pairs) != len(wantPairs) {
			t.Fatalf("seed %d: %d type pairs, want %d", seed, len(got.Pairs), len(wantPairs))
		}
		for k, w := range wantPairs {
			g := got.Pairs[k]
			if g.Count != w.Count || g.MaxDelta != w.MaxDelta || g.MeanDelta != w.MeanDelta {
				t.Fatalf("seed %d: pair %v = %+v, want %+v", seed, k, g, w)
			}
		}
	}
}

// referenceOrder is the definition of AnalyzeCommitOrder spelled out the
// slow, obvious way: both total orders as comparisons, every pair, and every
// event's rank in each order.
func referenceOrder(evs []CommitEvent, bySeq bool) (pairs, displaced int) {
	var timed []CommitEvent
	for _, e := range evs {
		if !e.CommitAt.IsZero() {
			timed = append(timed, e)
		}
	}
	key := func(a, b CommitEvent) int { // key, then commit order
		if bySeq && a.Seq != b.Seq {
			return cmp.Compare(a.Seq, b.Seq)
		}
		if !bySeq && a.ID != b.ID {
			return strings.Compare(a.ID, b.ID)
		}
		return cmp.Or(a.CommitAt.Compare(b.CommitAt), cmp.Compare(a.Tie, b.Tie), strings.Compare(a.ID, b.ID))
	}
	commit := func(a, b CommitEvent) int { // commit, Tie, then key order
		if c := cmp.Or(a.CommitAt.Compare(b.CommitAt), cmp.Compare(a.Tie, b.Tie)); c != 0 {
			return c
		}
		if bySeq && a.Seq != b.Seq {
			return cmp.Compare(a.Seq, b.Seq)
		}
		return strings.Compare(a.ID, b.ID)
	}
	rank := func(i int, order func(a, b CommitEvent) int) int {
		r := 0
		for j := range timed {
			if j != i && (order(timed[j], timed[i]) < 0 || order(timed[j], timed[i]) == 0 && j < i) {
				r++
			}
		}
		return r
	}
	for i := range timed {
		for j := range timed {
			if key(timed[i], timed[j]) < 0 && commit(timed[i], timed[j]) > 0 {
				pairs++
			}
		}
		if rank(i, key) != rank(i, commit) {
			displaced++
		}
	}
	return pairs, displaced
}

// TestCommitOrderMatchesTheReference draws logs with every kind of tie:
// commit times from a small range, transactions that commit several events
// at one time, duplicate seqs and ids, events without a commit time, keyed
// by id and by seq, in any input order.
func TestCommitOrderMatchesTheReference(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 7, 29, 0, 0, 0, 0, time.UTC)
	for _, bySeq := range []bool{false, true} {
		for seed := range uint64(300) {
			rng := rand.New(rand.NewPCG(seed, 9))
			n := 1 + rng.IntN(40)
			evs := make([]CommitEvent, n)
			for i := range evs {
				tx := rng.IntN(n/3 + 1)
				evs[i] = CommitEvent{
					ID:       fmt.Sprintf("e%03d", rng.IntN(n+n/4)), // some duplicates
					Seq:      int64(1 + rng.IntN(n)),                // some duplicates
					CommitAt: base.Add(time.Duration(tx%7) * time.Millisecond),
					Tie:      uint64(tx),
				}
				if seed%2 == 1 { // ties drawn apart from the times
					evs[i].Tie = uint64(rng.IntN(3))
				}
				if seed%50 == 7 && i == 0 { // times too far apart for the merger's keys
					evs[i].CommitAt = base.AddDate(200, 0, 0)
				}
				if rng.IntN(6) == 0 {
					evs[i].CommitAt = time.Time{}
				}
			}
			got := AnalyzeCommitOrder(evs, bySeq)
			wantP, wantD := referenceOrder(evs, bySeq)
			if got.InvertedPairs != wantP || got.Displaced != wantD {
				t.Fatalf("bySeq %v seed %d: %d pairs, %d displaced; reference %d, %d\n%+v", bySeq, seed, got.InvertedPairs, got.Displaced, wantP, wantD, evs)
			}
			rng.Shuffle(n, func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
			if again := AnalyzeCommitOrder(evs, bySeq); again.InvertedPairs != got.InvertedPairs || again.Displaced != got.Displaced {
				t.Fatalf("bySeq %v seed %d: the input order changed the count: %+v then %+v", bySeq, seed, got, again)
			}
		}
	}
}

func TestCommitOrderCases(t *testing.T) {
	t.Parallel()
	at := func(ms int) time.Time { return time.Date(2026, 7, 29, 0, 0, 0, ms*int(time.Millisecond), time.UTC) }
	tests := []struct {
		name      string
		evs       []CommitEvent
		pairs     int
		displaced int
		without   int
	}{
		{"in order", []CommitEvent{{ID: "a", CommitAt: at(1)}, {ID: "b", CommitAt: at(2)}, {ID: "c", CommitAt: at(3)}}, 0, 0, 0},
		{"hook overtakes a step", []CommitEvent{
			{ID: "a", Type: eventlog.StepCreated, CommitAt: at(150)},
			{ID: "b", Type: eventlog.HookReceived, CommitAt: at(2)},
		}, 1, 2, 0},
		{"one late commit behind three", []CommitEvent{{ID: "a", CommitAt: at(9)}, {ID: "b", CommitAt: at(1)}, {ID: "c", CommitAt: at(2)}, {ID: "d", CommitAt: at(3)}}, 3, 4, 0},
		{"no commit time is counted, not placed", []CommitEvent{{ID: "a"}, {ID: "b", CommitAt: at(1)}}, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := AnalyzeCommitOrder(tt.evs, false)
			if got.InvertedPairs != tt.pairs || got.Displaced != tt.displaced || got.WithoutCommitTS != tt.without {
				t.Fatalf("got pairs %d displaced %d without %d, want %d %d %d", got.InvertedPairs, got.Displaced, got.WithoutCommitTS, tt.pairs, tt.displaced, tt.without)
			}
		})
	}
	o := AnalyzeCommitOrder([]CommitEvent{
		{ID: "a", Type: eventlog.StepCreated, CommitAt: at(150)},
		{ID: "b", Type: eventlog.HookReceived, CommitAt: at(2)},
	}, false)
	s := o.Pairs[TypePair{Overtaking: eventlog.HookReceived, Overtaken: eventlog.StepCreated}]
	if s.Count != 1 || s.MaxDelta != 148*time.Millisecond || s.MeanDelta != 148*time.Millisecond {
		t.Fatalf("hook_received over step_created = %+v, want one pair of 148ms", s)
	}
}
