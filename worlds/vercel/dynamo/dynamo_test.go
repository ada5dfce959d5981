package dynamo_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// embedded starts a minidyn server for t.
func embedded(t *testing.T) *dynamo.Embedded {
	t.Helper()
	e, err := dynamo.StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// open opens a store on e and closes it when t ends.
func open(t *testing.T, e *dynamo.Embedded, cfg dynamo.Config) *dynamo.Store {
	t.Helper()
	cfg.Endpoint, cfg.StaticCredentials = e.URL(), true
	st, err := dynamo.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// minter mints events of a run the way the ingest server does.
type minter struct{ m *eventlog.Minter }

func newMinter() minter { return minter{eventlog.NewMinter(eventlog.ServerPrefix, rand.Reader)} }

func (m minter) events(runID string, d ...eventlog.Draft) []eventlog.Event {
	now := time.Now().UTC()
	out := make([]eventlog.Event, len(d))
	for i, x := range d {
		out[i] = eventlog.Event{RunID: runID, ID: m.m.Mint(now), Type: x.Type, CorrelationID: x.CorrelationID,
			Token: x.Token, Dedup: x.Dedup, Payload: x.Payload, MintedAt: now}
	}
	return out
}

func step(typ eventlog.Type, corr string) eventlog.Draft {
	return eventlog.Draft{Type: typ, CorrelationID: corr, Payload: []byte(`{"k":"v"}`)}
}

// TestLayouts: one table for every run, or a table per run, hold the same
// items and answer the same way.
func TestLayouts(t *testing.T) {
	for _, perRun := range []bool{false, true} {
		t.Run(fmt.Sprintf("table_per_run=%v", perRun), func(t *testing.T) {
			ctx := t.Context()
			st := open(t, embedded(t), dynamo.Config{TablePerRun: perRun})
			m := newMinter()
			for _, s := range []eventlog.Scheme{eventlog.SchemeULID, eventlog.SchemeSeq} {
				run := eventlog.Run{ID: "wrun_" + string(s), Scheme: s}
				if err := st.CreateRun(ctx, run); err != nil {
					t.Fatal(err)
				}
				if err := st.CreateRun(ctx, run); !errors.Is(err, dynamo.ErrRunExists) || !errors.Is(err, eventlog.ErrConflict) {
					t.Fatalf("CreateRun twice = %v, want ErrRunExists", err)
				}
				write := func(evs []eventlog.Event) (dynamo.Written, error) {
					if s == eventlog.SchemeSeq {
						return st.WriteSeq(ctx, run, evs, dynamo.Fence{})
					}
					return st.WriteULID(ctx, run, evs)
				}
				w1, err := write(m.events(run.ID, step(eventlog.StepCreated, "a"), step(eventlog.StepStarted, "a")))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := write(m.events(run.ID, step(eventlog.StepCompleted, "a"))); err != nil {
					t.Fatal(err)
				}
				if w1.Acked.Before(w1.Events[0].MintedAt) || w1.Attempts != 1 {
					t.Fatalf("written %+v: want an ack after the mint, in 1 attempt", w1)
				}
				p, err := st.List(ctx, run, eventlog.Cursor{}, 2)
				if err != nil || len(p.Events) != 2 || !p.More {
					t.Fatalf("List(limit 2) = %d events, More %v, %v", len(p.Events), p.More, err)
				}
				rest, err := st.List(ctx, run, p.Next, 0)
				if err != nil || len(rest.Events) != 1 || rest.More || rest.Events[0].Type != eventlog.StepCompleted {
					t.Fatalf("List(after the page) = %+v, %v", rest, err)
				}
				if n, err := st.Count(ctx, run.ID); err != nil || n != 3 {
					t.Fatalf("Count = %d, %v; want 3", n, err)
				}
				if s == eventlog.SchemeSeq && rest.Events[0].Seq != 3 {
					t.Fatalf("third event at seq %d", rest.Events[0].Seq)
				}
				if string(rest.Events[0].Payload) != `{"k":"v"}` {
					t.Fatalf("payload %s did not round-trip", rest.Events[0].Payload)
				}
			}
			missing := eventlog.Run{ID: "wrun_missing", Scheme: eventlog.SchemeSeq}
			if _, err := st.Run(ctx, missing.ID); !errors.Is(err, eventlog.ErrNoRun) {
				t.Fatalf("Run(missing) = %v, want ErrNoRun", err)
			}
		})
	}
}

// TestCounterRace: 8 writers append facts to one seq run at once through
// one Store; they take turns for the transaction, and the log ends dense
// with each fact once.
func TestCounterRace(t *testing.T) {
	ctx := t.Context()
	st := open(t, embedded(t), dynamo.Config{TablePerRun: true})
	run := eventlog.Run{ID: "wrun_race", Scheme: eventlog.SchemeSeq}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	m := newMinter()
	const writers, each = 8, 12
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := st.WriteSeq(ctx, run, m.events(run.ID, step(eventlog.StepCompleted, fmt.Sprintf("w%d_%d", w, i))), dynamo.Fence{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	p, err := st.List(ctx, run, eventlog.Cursor{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != writers*each {
		t.Fatalf("log holds %d events, want %d", len(p.Events), writers*each)
	}
}

// TestFence: a fenced batch at a stale position is rejected with the
// counter's value and writes nothing; under FenceOnDecisions facts do not
// move the fence.
func TestFence(t *testing.T) {
	ctx := t.Context()
	st := open(t, embedded(t), dynamo.Config{})
	m := newMinter()
	for _, basis := range []eventlog.FenceBasis{eventlog.FenceOnLog, eventlog.FenceOnDecisions} {
		run := eventlog.Run{ID: "wrun_fence_" + string(basis), Scheme: eventlog.SchemeSeq, FenceBasis: basis}
		if err := st.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if _, err := st.WriteSeq(ctx, run, m.events(run.ID, step(eventlog.RunCreated, "")), dynamo.Fence{On: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.WriteSeq(ctx, run, m.events(run.ID, step(eventlog.StepStarted, "x")), dynamo.Fence{}); err != nil {
			t.Fatal(err)
		}
		_, err := st.WriteSeq(ctx, run, m.events(run.ID, step(eventlog.StepCreated, "b")), dynamo.Fence{On: true, Expected: 1})
		var fe *eventlog.FencedError
		switch {
		case basis == eventlog.FenceOnLog && (!errors.As(err, &fe) || fe.Actual != 2):
			t.Fatalf("%q: stale fenced write = %v, want FencedError with Actual 2", basis, err)
		case basis == eventlog.FenceOnDecisions && err != nil:
			t.Fatalf("%q: a fact moved the fence: %v", basis, err)
		}
		evs, err := st.Dump(ctx, run)
		if want := map[eventlog.FenceBasis]int{eventlog.FenceOnLog: 2, eventlog.FenceOnDecisions: 3}[basis]; err != nil || len(evs) != want {
			t.Fatalf("%q: %d events (%v), want %d", basis, len(evs), err, want)
		}
	}
}

// TestOwnTableOnly: a Store refuses a table that exists, deletes its own on
// Close, and with Keep leaves it.
func TestOwnTableOnly(t *testing.T) {
	e := embedded(t)
	ctx := t.Context()
	name := dynamo.TablePrefix + "owned"
	st := open(t, e, dynamo.Config{Table: name})
	if _, err := dynamo.Open(ctx, dynamo.Config{Endpoint: e.URL(), StaticCredentials: true, Table: name}); !errors.Is(err, dynamo.ErrTableExists) {
		t.Fatalf("Open on a taken table = %v, want ErrTableExists", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	kept := open(t, e, dynamo.Config{Table: name, Keep: true})
	if err := kept.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := dynamo.Open(ctx, dynamo.Config{Endpoint: e.URL(), StaticCredentials: true, Table: name}); !errors.Is(err, dynamo.ErrTableExists) {
		t.Fatalf("after Close with Keep, Open = %v, want ErrTableExists (the table kept)", err)
	}
	for _, bad := range []string{"other_table", dynamo.TablePrefix + "a b", dynamo.TablePrefix} {
		if _, err := dynamo.Open(ctx, dynamo.Config{Endpoint: e.URL(), Table: bad}); err == nil || errors.Is(err, eventlog.ErrUnavailable) {
			t.Fatalf("Open(table %q) = %v, want a configuration error", bad, err)
		}
	}
}

// TestReset: Reset drops every run of either layout; the store stays
// usable.
func TestReset(t *testing.T) {
	for _, perRun := range []bool{false, true} {
		ctx := t.Context()
		st := open(t, embedded(t), dynamo.Config{TablePerRun: perRun})
		run := eventlog.Run{ID: "wrun_r", Scheme: eventlog.SchemeSeq}
		if err := st.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if err := st.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Run(ctx, run.ID); !errors.Is(err, eventlog.ErrNoRun) {
			t.Fatalf("table per run %v: Run after Reset = %v, want ErrNoRun", perRun, err)
		}
		if err := st.CreateRun(ctx, run); err != nil {
			t.Fatalf("table per run %v: CreateRun after Reset: %v", perRun, err)
		}
	}
}

// TestDeadEndpoint: an endpoint with nothing behind it fails Open on its
// refused connection (not on a timeout, and not after the watchdog) with
// ErrUnavailable and a one-line message naming it.
func TestDeadEndpoint(t *testing.T) {
	for _, perRun := range []bool{false, true} {
		err := worldtest.Unavailable(t, fmt.Sprintf("Open (table per run %v)", perRun), func(ctx context.Context) error {
			st, err := dynamo.Open(ctx, dynamo.Config{Endpoint: "http://127.0.0.1:1", StaticCredentials: true, TablePerRun: perRun})
			if err == nil {
				_ = st.Close()
			}
			return err
		}, worldtest.Refused)
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Fatalf("message %q: want one line naming the endpoint", err)
		}
	}
}

// TestCoalescedReads: while 8 readers re-read a seq run, a writer that has
// appended an event reads it back at once, every time: a shared read is
// never one that started before the reader arrived.
func TestCoalescedReads(t *testing.T) {
	ctx := t.Context()
	st := open(t, embedded(t), dynamo.Config{TablePerRun: true})
	run := eventlog.Run{ID: "wrun_reads", Scheme: eventlog.SchemeSeq}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	m := newMinter()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := st.List(ctx, run, eventlog.Cursor{}, 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 40 {
		w, err := st.WriteSeq(ctx, run, m.events(run.ID, step(eventlog.StepCompleted, fmt.Sprint("c", i))), dynamo.Fence{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := st.List(ctx, run, eventlog.Cursor{Seq: w.Events[0].Seq - 1}, 0)
		if err != nil || len(p.Events) != 1 || p.Events[0].ID != w.Events[0].ID {
			t.Fatalf("write %d (seq %d) read back as %+v, %v", i, w.Events[0].Seq, p.Events, err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestTablesWhileWriting: tables created for new runs while other runs'
// transactions run (a table per run) do not race inside the embedded server
// (under -race this failed, and a storm once died of it: concurrent map read
// and map write).
func TestTablesWhileWriting(t *testing.T) {
	ctx := t.Context()
	st := open(t, embedded(t), dynamo.Config{TablePerRun: true})
	run := eventlog.Run{ID: "wrun_busy", Scheme: eventlog.SchemeSeq}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	m := newMinter()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 15 {
			if err := st.CreateRun(ctx, eventlog.Run{ID: fmt.Sprintf("wrun_new%d", i), Scheme: eventlog.SchemeSeq}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for w := range 2 {
		wg.Go(func() {
			for i := range 15 {
				if _, err := st.WriteSeq(ctx, run, m.events(run.ID, step(eventlog.StepCompleted, fmt.Sprintf("w%d_%d", w, i))), dynamo.Fence{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestWriteClaims: events claim the keys they are given, not their drafts':
// a taken key refuses the whole batch, an event may claim none (written
// every time) or several, and types outside stormctl's are stored.
func TestWriteClaims(t *testing.T) {
	ctx := t.Context()
	st := open(t, embedded(t), dynamo.Config{TablePerRun: true})
	run := eventlog.Run{ID: "wrun_claims", Scheme: eventlog.SchemeULID}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	m := newMinter()
	started := eventlog.Draft{Type: "run_started"}
	tests := []struct {
		name   string
		drafts []eventlog.Draft
		claims [][]string
		taken  string // the key refused, "" when written
	}{
		{"a foreign type, no key", []eventlog.Draft{started}, [][]string{nil}, ""},
		{"again: no key, written again", []eventlog.Draft{started}, [][]string{nil}, ""},
		{"two keys", []eventlog.Draft{step(eventlog.StepCreated, "s1")}, [][]string{{"step/s1", "token/t"}}, ""},
		{"one of them taken", []eventlog.Draft{step(eventlog.StepCreated, "s2")}, [][]string{{"step/s2", "token/t"}}, "token/t"},
		{"the batch refused whole", []eventlog.Draft{started, step(eventlog.StepCreated, "s1")}, [][]string{nil, {"step/s1"}}, "step/s1"},
		{"twice in one batch", []eventlog.Draft{started, started}, [][]string{{"k"}, {"k"}}, "k"},
	}
	want := 0
	for _, tt := range tests {
		_, err := st.WriteClaims(ctx, run, m.events(run.ID, tt.drafts...), tt.claims)
		var ce *eventlog.ConflictError
		switch {
		case tt.taken == "" && err != nil:
			t.Fatalf("%s: %v", tt.name, err)
		case tt.taken != "" && (!errors.As(err, &ce) || ce.Key != tt.taken):
			t.Fatalf("%s: err %v, want a conflict on %s", tt.name, err, tt.taken)
		case tt.taken == "":
			want += len(tt.drafts)
		}
	}
	p, err := st.List(ctx, run, eventlog.Cursor{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != want || p.Events[0].Type != "run_started" {
		t.Fatalf("listed %d events (first %+v), want %d starting with run_started", len(p.Events), p.Events[0], want)
	}
}
