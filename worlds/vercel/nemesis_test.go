package vercel_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds/nemesistest"
	"github.com/stormctl/stormctl/worlds/vercel"
)

// TestNemesis runs the fault contract (nemesistest) against every fault
// kind of the vercel world on its own stack: every error a writer or
// reader sees while the fault lasts is ErrUnavailable (an ingest answer
// dropped after the write committed included: the writer finds it on its
// next read), no read is anything but a prefix of the final log, and
// writes go through again once it heals. redis-down acts on runs with the
// count-index guard only.
func TestNemesis(t *testing.T) {
	w := openWorld(t, vercel.Config{Nemesis: true})
	seq := eventlog.Run{Scheme: eventlog.SchemeSeq}
	ulid := eventlog.Run{Scheme: eventlog.SchemeULID}
	guarded := eventlog.Run{Scheme: eventlog.SchemeULID, Guard: eventlog.GuardCountIndex}
	tests := []struct {
		kind nemesis.Kind
		runs []eventlog.Run
	}{
		{nemesis.Ingest503, []eventlog.Run{seq, ulid}},
		{nemesis.DynamoPause, []eventlog.Run{seq, ulid}},
		{nemesis.RedisDown, []eventlog.Run{guarded}},
		{nemesis.Latency, []eventlog.Run{seq}},
	}
	ts := w.Targets()
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			for _, run := range tt.runs {
				t.Run(string(run.Scheme)+string(run.Guard), func(t *testing.T) {
					nemesistest.Exercise(t, w, run, func(ctx context.Context) error {
						f := nemesis.Fault{Kind: tt.kind, For: window(tt.kind), Delay: 60 * time.Millisecond}
						for _, x := range ts {
							if x.Kind != tt.kind {
								continue
							}
							detail, err := x.Inject(ctx, f)
							t.Logf("%s on %s: %s", tt.kind, x.Name, detail)
							if err != nil {
								return err
							}
						}
						return nil
					})
				})
			}
		})
	}
}

// TestNemesisTargets: a World opened with the nemesis on offers every
// kind of its own stack; one opened without offers none.
func TestNemesisTargets(t *testing.T) {
	kinds := map[nemesis.Kind]int{}
	for _, x := range openWorld(t, vercel.Config{Nemesis: true}).Targets() {
		kinds[x.Kind]++
	}
	want := map[nemesis.Kind]int{nemesis.Latency: 2, nemesis.Ingest503: 1, nemesis.DynamoPause: 1, nemesis.RedisDown: 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s targets, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if ts := openWorld(t, vercel.Config{}).Targets(); len(ts) != 0 {
		t.Errorf("without the nemesis: %d targets, want none", len(ts))
	}
}

// TestNemesisRefusesRemote: an ingest server or DynamoDB endpoint off
// loopback is refused with a *nemesis.NotLoopbackError before anything is
// sent to it.
func TestNemesisRefusesRemote(t *testing.T) {
	for _, cfg := range []vercel.Config{
		{IngestURL: "http://ingest.example.com:8080", Nemesis: true},
		{DynamoEndpoint: "http://dynamodb.us-east-1.amazonaws.com", Nemesis: true},
	} {
		_, err := vercel.Open(t.Context(), cfg)
		var nl *nemesis.NotLoopbackError
		if !errors.As(err, &nl) {
			t.Errorf("Open(%+v) = %v, want a NotLoopbackError", cfg, err)
		}
	}
}

// TestHungServerIsUnavailable: an ingest server that never answers is
// unavailable once Config.RequestTimeout passes, not a run waiting for
// ever (which a storm would call stuck).
func TestHungServerIsUnavailable(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	w, err := vercel.Open(t.Context(), vercel.Config{IngestURL: srv.URL, RequestTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	_, err = w.List(t.Context(), "wrun_x", eventlog.Cursor{}, 10)
	if !errors.Is(err, eventlog.ErrUnavailable) {
		t.Fatalf("List on a hung server = %v, want ErrUnavailable", err)
	}
}

// window is a test fault's length: Redis gets longer, since the client's
// own retries ride out a short outage unseen.
func window(k nemesis.Kind) time.Duration {
	if k == nemesis.RedisDown {
		return 1500 * time.Millisecond
	}
	return 600 * time.Millisecond
}
