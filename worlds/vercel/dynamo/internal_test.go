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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/stormctl/stormctl/eventlog"
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
	e, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, err := Open(ctx, Config{Endpoint: e.URL(), StaticCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := newStore(ctx, a.cfg) // the same table, its own locks and cache
	if err != nil {
		t.Fatal(err)
	}
	b.cfg.Keep = true
	defer b.Close()
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
