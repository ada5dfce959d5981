package dynamo

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestCancelled: the reasons of a cancelled transaction are told apart per
// item, as DynamoDB reports them (every failed condition), not only as
// minidyn does (the first).
func TestCancelled(t *testing.T) {
	reason := func(code string) types.CancellationReason { return types.CancellationReason{Code: aws.String(code)} }
	old := map[string]types.AttributeValue{attrNextSeq: n(7), attrLastFenced: n(5)}
	tests := []struct {
		name    string
		reasons []types.CancellationReason
		want    cancellation
	}{
		{"counter only", []types.CancellationReason{{Code: aws.String("ConditionalCheckFailed"), Item: old}, reason("None"), reason("None")},
			cancellation{counter: true, old: old, taken: -1}},
		{"key only", []types.CancellationReason{reason("None"), reason("None"), reason("ConditionalCheckFailed")},
			cancellation{taken: 2}},
		{"counter and key", []types.CancellationReason{reason("ConditionalCheckFailed"), reason("None"), reason("ConditionalCheckFailed")},
			cancellation{counter: true, taken: 2}},
		{"another transaction", []types.CancellationReason{reason("None"), reason("TransactionConflict")},
			cancellation{taken: -1, retry: true}},
		{"item too large", []types.CancellationReason{reason("None"), reason("ValidationError")},
			cancellation{taken: -1, other: "ValidationError"}},
		{"no reasons", nil, cancellation{taken: -1, retry: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := cancelled(&types.TransactionCanceledException{CancellationReasons: tt.reasons}, 0)
			if !ok {
				t.Fatal("not recognised as a cancelled transaction")
			}
			if c.counter != tt.want.counter || c.taken != tt.want.taken || c.retry != tt.want.retry || c.other != tt.want.other || (tt.want.old != nil) != (c.old != nil) {
				t.Fatalf("cancelled = %+v, want %+v", c, tt.want)
			}
		})
	}
	if _, ok := cancelled(errors.New("boom"), 0); ok {
		t.Fatal("a plain error was taken for a cancelled transaction")
	}
	next, fenced, err := counters(old)
	if err != nil || next != 7 || fenced != 5 {
		t.Fatalf("counters(ALL_OLD item) = %d, %d, %v", next, fenced, err)
	}
}

// TestTwoStores: two Stores on one table (two ingest servers, say) race for
// one run's counter. Each one's writers take turns, but the two only meet
// at the condition: the loser retries with the counter its failed
// transaction returned, a stale cached counter is corrected the same way,
// and a fenced batch built on a stale view is rejected. The log ends dense.
func TestTwoStores(t *testing.T) {
	ctx := t.Context()
	a, b := twoStores(t)
	run := eventlog.Run{ID: "wrun_two", Scheme: eventlog.SchemeSeq}
	if err := a.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	m := eventlog.NewMinter(eventlog.ServerPrefix, rand.Reader)
	ev := func(corr string) []eventlog.Event {
		now := time.Now()
		return []eventlog.Event{{RunID: run.ID, ID: m.Mint(now), Type: eventlog.StepCompleted, CorrelationID: corr, MintedAt: now}}
	}
	const writers, each = 8, 10
	var mu sync.Mutex
	retries := 0
	var wg sync.WaitGroup
	for w := range writers {
		st := []*Store{a, b}[w%2]
		wg.Go(func() {
			for i := range each {
				res, err := st.WriteSeq(ctx, run, ev(fmt.Sprintf("w%d_%d", w, i)), Fence{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				retries += res.Attempts - 1
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if _, err := a.WriteSeq(ctx, run, ev("a_last"), Fence{}); err != nil {
		t.Fatal(err)
	}
	// b's cache is stale now: its next write must still land at the end.
	res, err := b.WriteSeq(ctx, run, ev("b_last"), Fence{})
	if err != nil || res.Events[0].Seq != writers*each+2 || res.Attempts != 2 {
		t.Fatalf("write through the stale store: %+v, %v; want seq %d after one lost attempt", res, err, writers*each+2)
	}
	var fe *eventlog.FencedError
	if _, err := a.WriteSeq(ctx, run, ev("stale_decision"), Fence{On: true, Expected: writers*each + 1}); !errors.As(err, &fe) || fe.Actual != writers*each+2 {
		t.Fatalf("fenced write on a stale view = %v, want FencedError with Actual %d", err, writers*each+2)
	}
	p, err := a.List(ctx, run, eventlog.Cursor{}, 0)
	if err != nil || len(p.Events) != writers*each+2 {
		t.Fatalf("log: %d events, %v; want %d, dense", len(p.Events), err, writers*each+2)
	}
	if retries == 0 {
		t.Log("the two stores never collided this time")
	}
	t.Logf("%d retries after losing the counter to the other store", retries)
}

// TestDescribeWhileWriting: describing a table while other requests write
// to it (a store waiting for a table, another store's probe) does not race
// inside the embedded server: minidyn's DescribeTable counts the table's
// items without the lock its writes take. Under -race this failed in the
// Workflow DevKit vercel world's conformance run, and here without the
// guard.
func TestDescribeWhileWriting(t *testing.T) {
	ctx := t.Context()
	st := embeddedStore(t, Config{})
	run := eventlog.Run{ID: "wrun_described", Scheme: eventlog.SchemeSeq}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	m := eventlog.NewMinter(eventlog.ServerPrefix, rand.Reader)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 30 {
			out, err := st.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(st.cfg.Table)})
			if err != nil || out.Table == nil {
				t.Errorf("describe %s: %+v, %v", st.cfg.Table, out, err)
				return
			}
		}
	})
	for w := range 2 {
		wg.Go(func() {
			for i := range 15 {
				now := time.Now()
				ev := []eventlog.Event{{RunID: run.ID, ID: m.Mint(now), Type: eventlog.StepCompleted, CorrelationID: fmt.Sprintf("w%d_%d", w, i), MintedAt: now}}
				if _, err := st.WriteSeq(ctx, run, ev, Fence{}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestSDKLogsGoToTheLogger: what the SDK logs (such as its warning about a
// response body it could not drain after a cancelled request) reaches the
// Store's logger at debug level, never the process's stderr.
func TestSDKLogsGoToTheLogger(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := newStore(t.Context(), Config{Endpoint: "http://127.0.0.1:1", StaticCredentials: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	st.db.Options().Logger.Logf(logging.Warn, "failed to discard remaining HTTP response body: %s", "closed")
	if got := buf.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "source=aws-sdk") ||
		!strings.Contains(got, "failed to discard remaining HTTP response body: closed") {
		t.Fatalf("logged %q, want the SDK's line at debug level", got)
	}
}

// TestCommitRefusedReadsEveryReason: DynamoDB reports every failed
// condition of a refused commit (minidyn only the first): a sealed slot
// anywhere among them makes the commit void and seals the rest, whatever
// failed before it; reasons without the item (no ALL_OLD) are read again.
func TestCommitRefusedReadsEveryReason(t *testing.T) {
	ctx := t.Context()
	st := embeddedStore(t, Config{TablePerRun: true})
	run := eventlog.Run{ID: "wrun_reasons", Scheme: eventlog.SchemeSlot}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	d := []eventlog.Draft{
		{Type: eventlog.StepCreated, CorrelationID: "a"},
		{Type: eventlog.StepCreated, CorrelationID: "b"},
		{Type: eventlog.StepCreated, CorrelationID: "c"},
	}
	r, err := st.Reserve(ctx, run, d, Fence{})
	if err != nil {
		t.Fatal(err)
	}
	if _, sealed, err := st.Seal(ctx, run, 3, "reader"); !sealed || err != nil {
		t.Fatalf("Seal(3) = %v, %v", sealed, err)
	}
	old2, err := st.slotItem(ctx, run.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Slot 1 failed without its item returned, slot 2 with it (reserved:
	// say the keys differed), slot 3 is the seal.
	w, err := st.commitRefused(ctx, run, r.First, len(d), []failedItem{{index: 0}, {index: 1, old: old2}, {index: 2}}, "writer")
	var se *eventlog.SealedError
	if !errors.As(err, &se) || se.Slot != 3 || len(w.Noops) != 2 || w.Noops[0].Seq != 1 || w.Noops[1].Seq != 2 {
		t.Fatalf("commitRefused = %+v, %v; want SealedError at 3 and noops at 1 and 2", w, err)
	}
	for _, n := range w.Noops {
		if n.CommittedAt.Before(n.MintedAt) || !n.MintedAt.Equal(r.ReservedAt) {
			t.Fatalf("noop %+v: want minted at the reservation and committed after", n)
		}
	}
	// Without a seal among the reasons, the first refusal is the error.
	x := []eventlog.Draft{{Type: eventlog.StepCompleted, CorrelationID: "x"}}
	rx, err := st.Reserve(ctx, run, x, Fence{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(ctx, run, rx.First, rx.ReservedAt, x, ""); err != nil {
		t.Fatal(err)
	}
	w, err = st.commitRefused(ctx, run, rx.First, 2, []failedItem{{index: 0}, {index: 1}}, "")
	if !errors.Is(err, ErrNotReserved) || len(w.Noops) != 0 {
		t.Fatalf("commitRefused of a committed slot and one never reserved = %+v, %v; want ErrNotReserved first, no seals", w, err)
	}
}

// TestTwoStoresReserve: two Stores on one table reserve and commit on one
// slot run at once; they meet only at the counter's condition, a stale
// cached counter is corrected by it, and the log ends dense with every
// write once.
func TestTwoStoresReserve(t *testing.T) {
	ctx := t.Context()
	a, b := twoStores(t)
	run := eventlog.Run{ID: "wrun_two_slots", Scheme: eventlog.SchemeSlot}
	if err := a.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for w := range writers {
		st := []*Store{a, b}[w%2]
		wg.Go(func() {
			for i := range each {
				d := []eventlog.Draft{{Type: eventlog.StepCompleted, CorrelationID: fmt.Sprintf("w%d_%d", w, i)}}
				r, err := st.Reserve(ctx, run, d, Fence{})
				if err == nil {
					_, err = st.Commit(ctx, run, r.First, r.ReservedAt, d, "")
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	r, err := b.Reserve(ctx, run, []eventlog.Draft{{Type: eventlog.StepCompleted, CorrelationID: "b_last"}}, Fence{})
	if err != nil || r.First != writers*each+1 {
		t.Fatalf("Reserve through b = %+v, %v; want slot %d", r, err, writers*each+1)
	}
	if _, err := a.Reserve(ctx, run, []eventlog.Draft{{Type: eventlog.StepCompleted, CorrelationID: "a_last"}}, Fence{}); err != nil {
		t.Fatal(err)
	}
	// b's cached counter is stale now: its fenced reservation at what it
	// last saw is rejected with the real counter.
	var fe *eventlog.FencedError
	if _, err := b.Reserve(ctx, run, []eventlog.Draft{{Type: eventlog.StepCreated, CorrelationID: "stale"}}, Fence{On: true, Expected: writers*each + 1}); !errors.As(err, &fe) || fe.Actual != writers*each+2 {
		t.Fatalf("fenced reservation on a stale view = %v, want FencedError with Actual %d", err, writers*each+2)
	}
	p, err := a.List(ctx, run, eventlog.Cursor{}, 0)
	if err != nil || len(p.Events) != writers*each {
		t.Fatalf("log: %d events, %v; want %d (the two reserved tail slots are no hole)", len(p.Events), err, writers*each)
	}
}

// embeddedStore opens a Store with cfg on an embedded DynamoDB-API server
// of its own; both close when the test ends.
func embeddedStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	e, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	cfg.Endpoint, cfg.StaticCredentials = e.URL(), true
	st, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// twoStores opens two Stores on one table of an embedded server (two ingest
// servers, say), each with its own locks and counter cache; b keeps the
// table, a drops it.
func twoStores(t *testing.T) (a, b *Store) {
	t.Helper()
	a = embeddedStore(t, Config{})
	b, err := newStore(t.Context(), a.cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.cfg.Keep = true
	t.Cleanup(func() { b.Close() })
	return a, b
}
