package devkitengine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

// fakeHost answers Finish's calls as a host would: status with the counts
// of its i-th read (or fails it), and cancel as the test says.
type fakeHost struct {
	// statuses are the answers to successive status reads, as the host's
	// JSON; "" fails the read with the host gone.
	statuses []string
	// cancel answers a cancel: "drain" waits out the caller's budget (the
	// host waits for the run's deliveries in flight), "gone" fails as a
	// host that died, "" answers at once.
	cancel string

	mu    sync.Mutex
	calls []string
}

func (h *fakeHost) Call(ctx context.Context, op string, _ map[string]any, out any) error {
	h.mu.Lock()
	h.calls = append(h.calls, op)
	reads := 0
	for _, c := range h.calls {
		if c == "status" {
			reads++
		}
	}
	h.mu.Unlock()
	gone := fmt.Errorf("%w (signal: killed)", sidecar.ErrExited)
	switch op {
	case "cancel":
		switch h.cancel {
		case "drain":
			<-ctx.Done()
			return ctx.Err()
		case "gone":
			return gone
		}
		return nil
	case "status":
		if err := ctx.Err(); err != nil {
			return err
		}
		if reads > len(h.statuses) || h.statuses[reads-1] == "" {
			return gone
		}
		return json.Unmarshal([]byte(h.statuses[reads-1]), out)
	}
	return fmt.Errorf("fake host: unexpected %s", op)
}

func (h *fakeHost) Stop() error { return nil }

// divergences is a status of a run with n divergences and inflight of its
// deliveries still running, as the host answers it.
func divergences(inflight, n int) string {
	d := make([]map[string]string, n)
	for i := range d {
		d[i] = map[string]string{"message": "m", "eventId": fmt.Sprintf("e%d", i)}
	}
	b, _ := json.Marshal(map[string]any{"status": "failed", "invocations": 61, "inflight": inflight, "divergences": d})
	return string(b)
}

// TestFinishKeepsTheCountsOfACutRun: a run that did not end by its timeout
// keeps what the runtime did for it (invocations, replays, divergences,
// recoveries, max_concurrent) whatever its cancel does: a cancel that
// outlasts its budget (the host waits for 118 deliveries in flight, as in
// the quiet storm's stuck step-storm runs, whose counts were all lost)
// leaves the read after it a budget of its own; a host that dies during
// the cancel leaves the counts read at the cut. Its op evidence, from the
// recorded notices, is kept alongside. A run that ended, or was cancelled,
// is read once the host says none of its deliveries is in flight (an
// invocation still running may write another run_failed), or, past the
// budget, as last read.
func TestFinishKeepsTheCountsOfACutRun(t *testing.T) {
	t.Parallel()
	atCut := `{"status":"running","invocations":118,"maxConcurrent":118,"recoveries":2,"divergences":[{"message":"m","eventId":"e1"},{"message":"m","eventId":"e2"}]}`
	after := `{"status":"cancelled","invocations":118,"maxConcurrent":118,"recoveries":3,"divergences":[{"message":"m","eventId":"e1"},{"message":"m","eventId":"e2"},{"message":"m","eventId":"e3"}]}`
	for _, tc := range []struct {
		name   string
		host   *fakeHost
		ended  bool
		want   history.RunStats
		infra  bool
		wantOp []string
	}{
		{name: "cancel outlasts its budget", host: &fakeHost{statuses: []string{atCut, after}, cancel: "drain"},
			want:   history.RunStats{Invocations: 118, Replays: 118, MaxConcurrent: 118, Recoveries: 3, Divergences: 3},
			wantOp: []string{"status", "cancel", "status"}},
		{name: "host gone during the cancel", host: &fakeHost{statuses: []string{atCut}, cancel: "gone"},
			want:   history.RunStats{Invocations: 118, Replays: 118, MaxConcurrent: 118, Recoveries: 2, Divergences: 2, InfraErrors: 1},
			infra:  true,
			wantOp: []string{"status", "cancel", "status"}},
		{name: "counts read after a quick cancel", host: &fakeHost{statuses: []string{atCut, after}},
			want:   history.RunStats{Invocations: 118, Replays: 118, MaxConcurrent: 118, Recoveries: 3, Divergences: 3},
			wantOp: []string{"status", "cancel", "status"}},
		{name: "a run that ended is read once", host: &fakeHost{statuses: []string{after}}, ended: true,
			want:   history.RunStats{Invocations: 118, Replays: 118, MaxConcurrent: 118, Recoveries: 3, Divergences: 3},
			wantOp: []string{"status"}},
		{name: "host gone before the cut: counts unknown, infra evidence", host: &fakeHost{statuses: []string{"", ""}, cancel: "drain"},
			want:   history.RunStats{InfraErrors: 1},
			infra:  true,
			wantOp: []string{"status", "cancel", "status"}},
		// The measured case: an invocation in flight when the run's first
		// run_failed landed wrote a second one (16 recorded, 17 replayed).
		{name: "a run that ended is read once its deliveries are done", host: &fakeHost{statuses: []string{divergences(1, 16), divergences(0, 17)}}, ended: true,
			want:   history.RunStats{Invocations: 61, Replays: 61, Divergences: 17},
			wantOp: []string{"status", "status"}},
		{name: "a cancelled run is read once its deliveries are done", host: &fakeHost{statuses: []string{atCut, divergences(2, 16), divergences(0, 17)}},
			want:   history.RunStats{Invocations: 61, Replays: 61, Divergences: 17},
			wantOp: []string{"status", "cancel", "status", "status"}},
		{name: "host gone while the deliveries end: the read before", host: &fakeHost{statuses: []string{divergences(1, 16), ""}}, ended: true,
			want:   history.RunStats{Invocations: 61, Replays: 61, Divergences: 16},
			wantOp: []string{"status", "status"}},
		{name: "deliveries that outlast the budget: the last read", host: &fakeHost{statuses: slices.Repeat([]string{divergences(1, 16)}, 1000)}, ended: true,
			want: history.RunStats{Invocations: 61, Replays: 61, Divergences: 16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line := recordedNotices(t)[0]
			var n notice
			if err := json.Unmarshal(line, &n); err != nil {
				t.Fatal(err)
			}
			h := tc.host
			hp := &hostProc{n: 1, proc: h, health: &health{}, live: 1, liveRuns: map[*run]bool{}}
			r := &run{token: "wrun_A", host: hp, done: make(chan struct{})}
			hp.liveRuns[r] = true
			e := &Engine{sink: &recorder{}, hosts: []*hostProc{hp}, grace: 50 * time.Millisecond, logger: slog.New(slog.DiscardHandler),
				runs: map[string]*run{n.RunID: r}, ended: map[string]bool{}, placed: map[string]*hostProc{n.RunID: hp}}
			e.notice(hp, line)
			if tc.ended {
				e.mu.Lock()
				r.end()
				e.mu.Unlock()
			}
			got := e.Finish(n.RunID)

			// The op evidence is the notices'.
			if !got.LastStoreOK.Equal(msTime(n.End)) {
				t.Errorf("last_store_ok %v, want the recorded op's end %v", got.LastStoreOK, msTime(n.End))
			}
			if (got.LastUnavailableErr != "") != tc.infra {
				t.Errorf("last_unavailable_err %q, want one: %v", got.LastUnavailableErr, tc.infra)
			}
			if got.Harness == nil || got.Harness.Host != 1 {
				t.Errorf("harness %+v, want the run's host's account (host 1)", got.Harness)
			}
			if hp.live != 0 || len(hp.liveRuns) != 0 {
				t.Errorf("the host still counts %d live runs after Finish", hp.live)
			}
			got.LastStoreOK, got.LastUnavailable, got.LastUnavailableErr, got.Harness = time.Time{}, time.Time{}, "", nil
			if got != tc.want {
				t.Errorf("stats %+v\nwant  %+v", got, tc.want)
			}
			if tc.wantOp != nil && fmt.Sprint(h.calls) != fmt.Sprint(tc.wantOp) {
				t.Errorf("calls %v, want %v", h.calls, tc.wantOp)
			}
			if tc.wantOp == nil && len(h.calls) < 2 {
				t.Errorf("calls %v, want the counts read again while deliveries run", h.calls)
			}
			if _, err := e.run(n.RunID); err == nil {
				t.Error("the run is still known after Finish")
			}
		})
	}
}
