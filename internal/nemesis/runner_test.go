package nemesis

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/base/clock"
)

// TestMain checks that no test leaves a goroutine behind (the runner's,
// the proxy's, the gate's).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTarget records the faults injected into it.
type fakeTarget struct {
	mu    sync.Mutex
	calls []Fault
}

func (f *fakeTarget) target(k Kind, name string) Target {
	return Target{Kind: k, Name: name, Inject: func(ctx context.Context, fl Fault) (string, error) {
		f.mu.Lock()
		f.calls = append(f.calls, fl)
		f.mu.Unlock()
		_ = clock.Sleep(ctx, fl.For)
		return "ok", nil
	}}
}

// TestRunner: a target two cells share is one target whose records name
// both cells; every fault hits every target of its kind in its world; runs
// are marked with the faults that overlapped them; Stop heals what is
// under way and leaves no goroutine behind.
func TestRunner(t *testing.T) {
	cfg := Config{Kinds: KindList{PGRestart, Latency}, Faults: 2, Window: 100 * time.Millisecond, Gap: 20 * time.Millisecond}
	r := NewRunner(cfg, 3, nil)
	cluster, proxyA, proxyB := &fakeTarget{}, &fakeTarget{}, &fakeTarget{}
	r.Add("postgres", "postgres/a/main", []Target{cluster.target(PGRestart, "cluster"), proxyA.target(Latency, "proxy a"),
		{Kind: FSUnavailable, Name: "not configured"}})
	r.Add("postgres", "postgres/a/seq", []Target{cluster.target(PGRestart, "cluster"), proxyB.target(Latency, "proxy b")})
	if m := r.Missing(); len(m) != 0 {
		t.Fatalf("Missing() = %v, want none", m)
	}
	if n := len(r.Schedule()); n != 4 {
		t.Fatalf("schedule has %d faults, want 2 kinds x 2", n)
	}
	var notified int
	var mu sync.Mutex
	ended := make(chan struct{})
	began := time.Now()
	r.Start(t.Context(), func(recs []Record) {
		mu.Lock()
		defer mu.Unlock()
		if notified++; notified == 12 {
			close(ended)
		}
	})
	waitFor(t, ended, "every fault of the schedule to start and end")
	recs := r.Stop()
	if len(cluster.calls) != 2 || len(proxyA.calls) != 2 || len(proxyB.calls) != 2 {
		t.Fatalf("calls: cluster %d, proxy a %d, proxy b %d; want 2 each", len(cluster.calls), len(proxyA.calls), len(proxyB.calls))
	}
	if len(recs) != 6 {
		t.Fatalf("%d records, want 6 (2 restarts of one cluster, 2 latency faults on 2 proxies)", len(recs))
	}
	for _, rec := range recs {
		if rec.End.IsZero() || rec.End.Before(rec.Start) || rec.Detail != "ok" {
			t.Errorf("record %+v: want an end after its start and the target's detail", rec)
		}
		if rec.Kind == PGRestart && len(rec.Cells) != 2 {
			t.Errorf("the shared cluster's record names cells %v, want both", rec.Cells)
		}
		if rec.Kind == Latency && len(rec.Cells) != 1 {
			t.Errorf("a proxy's record names cells %v, want its own", rec.Cells)
		}
	}
	if notified != 12 {
		t.Errorf("notified %d times, want 12 (each record's start and end)", notified)
	}
	first := recs[0]
	if got := r.Overlapping("postgres/a/main", began, first.Start); !slices.Contains(got, first.Label()) {
		t.Errorf("a run ending as fault %s started is not marked: %v", first.Label(), got)
	}
	if got := r.Overlapping("postgres/a/main", began, first.Start.Add(-time.Millisecond)); len(got) != 0 {
		t.Errorf("a run that ended before any fault is marked %v", got)
	}
	last := recs[len(recs)-1]
	for _, c := range last.Cells {
		if got := r.Overlapping(c, last.End.Add(Aftermath/2), time.Now()); !slices.Contains(got, last.Label()) {
			t.Errorf("a run starting within the aftermath of %s is not marked: %v", last.Label(), got)
		}
		if got := r.Overlapping(c, last.End.Add(Aftermath+time.Millisecond), time.Now()); slices.Contains(got, last.Label()) {
			t.Errorf("a run starting after the aftermath of %s is marked", last.Label())
		}
	}
	if got := r.Overlapping("local/x/main", began, time.Now()); len(got) != 0 {
		t.Errorf("a cell without targets is marked %v", got)
	}
}

// TestRunnerStopHeals: Stop during a fault cuts its window (an hour) short
// and returns once it healed; faults not started never start.
func TestRunnerStopHeals(t *testing.T) {
	cfg := Config{Kinds: KindList{FSUnavailable}, Faults: 5, Window: time.Hour, Gap: 20 * time.Millisecond}
	r := NewRunner(cfg, 1, nil)
	dir := &fakeTarget{}
	r.Add("local", "local/a/main", []Target{dir.target(FSUnavailable, "dir")})
	started := make(chan struct{})
	var once sync.Once
	r.Start(t.Context(), func([]Record) { once.Do(func() { close(started) }) })
	waitFor(t, started, "the first fault to start")
	stopped := make(chan []Record, 1)
	go func() { stopped <- r.Stop() }()
	var recs []Record
	select {
	case recs = <-stopped:
	case <-time.After(watchdog):
		t.Fatalf("hung: Stop had not returned after %s: it waits out the fault's hour-long window", watchdog)
	}
	if len(recs) != 1 || recs[0].End.IsZero() || len(dir.calls) != 1 {
		t.Fatalf("records %+v after %d injections, want the one fault under way, ended", recs, len(dir.calls))
	}
}

// waitFor waits until c is closed; the watchdog running out first fails t
// as hung, saying what it waited for.
func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(watchdog):
		t.Fatalf("hung: waited %s for %s", watchdog, what)
	}
}

// TestRunnerMissing: a kind named one by one that no target offers is
// missing; under "all" nothing is.
func TestRunnerMissing(t *testing.T) {
	r := NewRunner(Config{Kinds: KindList{PGRestart, Latency}}, 1, nil)
	r.Add("postgres", "postgres/a/main", []Target{{Kind: Latency, Name: "proxy"}})
	if m := r.Missing(); !slices.Equal(m, []Kind{PGRestart}) {
		t.Errorf("Missing() = %v, want [pg-restart]", m)
	}
	all := NewRunner(Config{Kinds: KindList(Kinds)}, 1, nil)
	all.Add("postgres", "postgres/a/main", []Target{{Kind: Latency, Name: "proxy"}})
	if m := all.Missing(); len(m) != 0 {
		t.Errorf("under all, Missing() = %v", m)
	}
}
