package vercel_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/goleak"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/vercel"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openWorld opens a World with its own stack and closes it when t ends.
func openWorld(t *testing.T, cfg vercel.Config) *vercel.World {
	t.Helper()
	w, err := vercel.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

func TestConformance(t *testing.T) {
	worldtest.Exercise(t, vercel.Entry(func(context.Context) (vercel.Config, error) { return vercel.Config{}, nil }), nil)
}

// listening reports whether something accepts connections at a URL's host.
func listening(t *testing.T, rawURL string) bool {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// TestRegister: the registry's vercel entry opens Worlds with their own
// stacks (ingest server, embedded minidyn and miniredis on loopback ports)
// and Close stops every listener; Options.Latency draws the windows of
// its ingest server (a write is held in one).
func TestRegister(t *testing.T) {
	var r worlds.Registry
	calls := 0
	vercel.Register(&r, func(context.Context) (vercel.Config, error) { calls++; return vercel.Config{}, nil })
	e, err := r.Lookup(vercel.Name)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ulid", "seq", "slot"}; !slices.Equal(e.Schemes, want) {
		t.Fatalf("Schemes = %v, want %v", e.Schemes, want)
	}
	hold := worldtest.NewHolder()
	ww, err := e.Open(t.Context(), worlds.Options{Latency: hold, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	w := ww.(*vercel.World)
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSeq})
	hold.Hold(1)
	done := appendAsync(t.Context(), w, run, worldtest.Draft(eventlog.StepCompleted, "a"))
	hold.Next(t, "the append in the window drawn from Options.Latency").Release()
	if err := <-done; err != nil {
		t.Fatalf("Append: %v", err)
	}
	if evs := worldtest.ListAll(t, w, run); len(evs) != 1 || evs[0].Seq != 1 || !evs[0].CommittedAt.After(evs[0].MintedAt) {
		t.Fatalf("log %+v; want seq 1, committed after its mint", evs)
	}
	urls := []string{w.URL(), w.Stack().Embedded().URL()}
	for _, u := range urls {
		if !listening(t, u) {
			t.Fatalf("%s is not listening while the world is open", u)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, u := range urls {
		if listening(t, u) {
			t.Fatalf("%s still listens after Close", u)
		}
	}
	if _, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "b")}); err == nil {
		t.Fatal("Append on a closed world succeeded")
	}
	if calls != 1 {
		t.Fatalf("the source was called %d times for one Open", calls)
	}
}

// TestIngestURL: a World given an ingest URL is only a client of that
// server: it sees the same runs, and its Close leaves the server running.
func TestIngestURL(t *testing.T) {
	owner := openWorld(t, vercel.Config{})
	run := worldtest.NewRun(t, owner, eventlog.Run{Scheme: eventlog.SchemeSeq})
	client, err := vercel.Open(t.Context(), vercel.Config{IngestURL: owner.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if client.Stack() != nil {
		t.Fatal("a World with an ingest URL started its own stack")
	}
	if _, err := client.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "via_client")}); err != nil {
		t.Fatal(err)
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := owner.List(t.Context(), run, eventlog.Cursor{}, 0)
	if err != nil || len(p.Events) != 1 || p.Events[0].CorrelationID != "via_client" {
		t.Fatalf("the owner reads %+v, %v", p.Events, err)
	}
	worldtest.Unavailable(t, "Open(dead ingest URL)", func(ctx context.Context) error {
		return closeOpened(vercel.Open(ctx, vercel.Config{IngestURL: "http://127.0.0.1:1"}))
	}, worldtest.Refused)
	if _, err := vercel.Open(t.Context(), vercel.Config{IngestURL: "ftp://x"}); err == nil || errors.Is(err, eventlog.ErrUnavailable) {
		t.Fatalf("Open(ftp URL) = %v, want a configuration error", err)
	}
}

// TestDeadEndpoints: a DynamoDB endpoint or Redis URL with nothing behind
// it fails Open on its refused connection (not on a timeout, and not after
// the watchdog) with ErrUnavailable, in one line that names it, and leaves
// nothing running.
func TestDeadEndpoints(t *testing.T) {
	tests := []struct {
		name string
		cfg  vercel.Config
		want string
	}{
		{"dynamo endpoint", vercel.Config{DynamoEndpoint: "http://127.0.0.1:1"}, "127.0.0.1:1"},
		{"redis URL", vercel.Config{RedisURL: "redis://127.0.0.1:1/0"}, "127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := worldtest.Unavailable(t, "Open", func(ctx context.Context) error {
				return closeOpened(vercel.Open(ctx, tt.cfg))
			}, worldtest.Refused)
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tt.want) {
				t.Fatalf("message %q: want one line naming %s", msg, tt.want)
			}
		})
	}
}

// closeOpened closes a World that opened after all and returns Open's error.
func closeOpened(w *vercel.World, err error) error {
	if err == nil {
		_ = w.Close()
	}
	return err
}

// machineRedisAddr is the machine's own Redis, a service on this machine.
const machineRedisAddr = "127.0.0.1:6379"

// machineRedis returns a client of the machine's Redis, closed with the
// test, or skips the test, saying why on stdout too, when none answers.
func machineRedis(t *testing.T) *redis.Client {
	t.Helper()
	probe := redis.NewClient(&redis.Options{Addr: machineRedisAddr, Protocol: 2, DisableIdentity: true, DialTimeout: time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { probe.Close() })
	if err := probe.Ping(t.Context()).Err(); err != nil {
		fmt.Printf("%s: skipped: no Redis at %s: %v\n", t.Name(), machineRedisAddr, err)
		t.Skipf("no Redis at %s: %v", machineRedisAddr, err)
	}
	return probe
}

// TestMachineRedis runs the count-index guard against the machine's own
// Redis (127.0.0.1:6379): the World's keys live under its namespace and
// Close removes them. Skipped, saying why, when no Redis answers there.
func TestMachineRedis(t *testing.T) {
	probe := machineRedis(t)
	w := openWorld(t, vercel.Config{RedisURL: "redis://" + machineRedisAddr + "/0"})
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeULID, Guard: eventlog.GuardCountIndex})
	if _, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.RunCreated, "")}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendFenced(t.Context(), run, 1, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "a")}); err != nil {
		t.Fatalf("a current writer: %v", err)
	}
	_, err := w.AppendFenced(t.Context(), run, 1, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "b")})
	var fe *eventlog.FencedError
	if !errors.As(err, &fe) || fe.Expected != 1 || fe.Actual != 2 {
		t.Fatalf("a stale writer: %v, want FencedError{1, 2}", err)
	}
	pattern := "stormctl:" + w.Stack().Table() + ":*"
	if keys, err := probe.Keys(t.Context(), pattern).Result(); err != nil || len(keys) != 2 {
		t.Fatalf("keys %v (%v), want the run's count and window", keys, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if keys, err := probe.Keys(t.Context(), pattern).Result(); err != nil || len(keys) != 0 {
		t.Fatalf("keys %v (%v) left in Redis after Close", keys, err)
	}
}

// TestKept: with Keep, Kept names what stays on a server the World was
// given (the machine's Redis here) once something was written there, and
// nothing for embedded servers, which go with the World; and the keys it
// names do stay after Close.
func TestKept(t *testing.T) {
	if kept := openWorld(t, vercel.Config{Keep: true}).Kept(); kept != "" {
		t.Errorf("embedded servers with Keep: Kept() = %q, want nothing (they go at Close)", kept)
	}
	probe := machineRedis(t)
	w := openWorld(t, vercel.Config{RedisURL: "redis://" + machineRedisAddr + "/0", Keep: true})
	pattern := "stormctl:" + w.Stack().Table() + ":*"
	t.Cleanup(func() {
		if keys, _ := probe.Keys(context.Background(), pattern).Result(); len(keys) > 0 {
			probe.Del(context.Background(), keys...)
		}
	})
	unguarded := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeULID})
	if _, err := w.Append(t.Context(), unguarded, []eventlog.Draft{worldtest.Draft(eventlog.RunCreated, "")}); err != nil {
		t.Fatal(err)
	}
	if kept := w.Kept(); kept != "" {
		t.Errorf("after a run without the guard: Kept() = %q, want nothing (no key was written)", kept)
	}
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeULID, Guard: eventlog.GuardCountIndex})
	if _, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.RunCreated, "")}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if kept := w.Kept(); kept != "Redis keys "+pattern {
		t.Errorf("Kept() = %q, want %q", kept, "Redis keys "+pattern)
	}
	if keys, err := probe.Keys(t.Context(), pattern).Result(); err != nil || len(keys) != 2 {
		t.Errorf("keys %v (%v) after Close with Keep, want the run's count and window", keys, err)
	}
}

// TestForensics: commit times are the server's observations of DynamoDB's
// acknowledgements (Source "server"), one per event in scheme order, each
// after its mint and at the time its append reported; guard counts come
// back through the World; Dump keeps what List would refuse to hide.
func TestForensics(t *testing.T) {
	w := openWorld(t, vercel.Config{Latency: worldtest.Latency(t, "fixed:2ms")})
	for _, s := range []eventlog.Scheme{eventlog.SchemeULID, eventlog.SchemeSeq, eventlog.SchemeSlot} {
		run := worldtest.NewRun(t, w, eventlog.Run{Scheme: s, Guard: eventlog.GuardCountIndex})
		var written []eventlog.Event
		for i := range 4 {
			evs, err := w.AppendFenced(t.Context(), run, int64(i), []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, fmt.Sprint("s", i))})
			if err != nil {
				t.Fatal(err)
			}
			written = append(written, evs...)
		}
		if _, err := w.AppendFenced(t.Context(), run, 2, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "stale")}); !errors.Is(err, eventlog.ErrFenced) {
			t.Fatalf("%s: stale guarded write = %v, want ErrFenced", s, err)
		}
		cts, err := w.CommitTimes(t.Context(), run)
		if err != nil || len(cts) != len(written) {
			t.Fatalf("%s: CommitTimes = %d, %v", s, len(cts), err)
		}
		for i, ct := range cts {
			e := written[i]
			switch {
			case ct.Source != "server" || ct.EventID != e.ID || ct.Seq != e.Seq:
				t.Fatalf("%s: commit time %d = %+v, want event %s seq %d from the server", s, i, ct, e.ID, e.Seq)
			case !ct.At.Equal(e.CommittedAt) || !ct.At.After(e.MintedAt):
				t.Fatalf("%s: event %d acked at %v, append said %v, minted %v", s, i, ct.At, e.CommittedAt, e.MintedAt)
			case i > 0 && !ct.At.After(cts[i-1].At):
				t.Fatalf("%s: commit time %d is not after %d", s, i, i-1)
			}
		}
		g, err := w.GuardCounts(t.Context(), run)
		if want := (history.GuardCounts{Evaluated: 5, Passed: 4, Rejected: 1}); err != nil || g != want {
			t.Fatalf("%s: GuardCounts = %+v, %v; want %+v", s, g, err, want)
		}
		dump, err := w.Dump(t.Context(), run)
		if err != nil || len(dump) != 4 {
			t.Fatalf("%s: Dump = %d events, %v", s, len(dump), err)
		}
	}
	if _, err := w.CommitTimes(t.Context(), "wrun_missing"); !errors.Is(err, eventlog.ErrNoRun) {
		t.Fatalf("CommitTimes of an unknown run = %v, want ErrNoRun", err)
	}
	if _, err := w.GuardCounts(t.Context(), "wrun_missing"); !errors.Is(err, eventlog.ErrNoRun) {
		t.Fatalf("GuardCounts of an unknown run = %v, want ErrNoRun", err)
	}
}

// TestErrorMapping: the client turns the server's answers back into the
// contract's errors, and a server (or store) that went away into
// ErrUnavailable.
func TestErrorMapping(t *testing.T) {
	w := openWorld(t, vercel.Config{})
	ctx := t.Context()
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSeq})
	if err := w.CreateRun(ctx, eventlog.Run{ID: run, Scheme: eventlog.SchemeSeq}); !errors.Is(err, eventlog.ErrConflict) {
		t.Fatalf("CreateRun twice = %v, want ErrConflict", err)
	}
	if err := w.CreateRun(ctx, eventlog.Run{ID: "wrun_bad", Scheme: eventlog.SchemeSequence}); err == nil || eventlog.Classify(err) != "other" {
		t.Fatalf("CreateRun(sequence) = %v, want a plain error", err)
	}
	if _, err := w.Append(ctx, run, []eventlog.Draft{{Type: eventlog.StepCompleted, CorrelationID: "x", Payload: []byte("{nope")}}); err == nil {
		t.Fatal("a draft with an invalid payload was accepted")
	}
	if _, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "a")}); err != nil {
		t.Fatal(err)
	}
	var ce *eventlog.ConflictError
	if _, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "a")}); !errors.As(err, &ce) || ce.Key != "step_completed/a" || ce.RunID != run {
		t.Fatalf("duplicate fact = %v, want ConflictError on step_completed/a of %s", err, run)
	}
	var fe *eventlog.FencedError
	if _, err := w.AppendFenced(ctx, run, 0, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "b")}); !errors.As(err, &fe) || fe.RunID != run || fe.Expected != 0 || fe.Actual != 1 {
		t.Fatalf("stale fenced batch = %v, want FencedError{%s, 0, 1}", err, run)
	}
	if _, err := w.List(ctx, "wrun_missing", eventlog.Cursor{}, 0); !errors.Is(err, eventlog.ErrNoRun) {
		t.Fatalf("List(unknown run) = %v, want ErrNoRun", err)
	}
	if err := w.Stack().Embedded().Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "c")}); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Fatalf("Append with DynamoDB gone = %v, want ErrUnavailable", err)
	}
	if err := w.Close(); err == nil {
		t.Log("Close after the store went away reported no error")
	}
	other := openWorld(t, vercel.Config{})
	client, err := vercel.Open(ctx, vercel.Config{IngestURL: other.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.List(ctx, run, eventlog.Cursor{}, 0); !errors.Is(err, eventlog.ErrUnavailable) {
		t.Fatalf("List with the ingest server gone = %v, want ErrUnavailable", err)
	}
}

// TestSlotWindow: under slot an Append reserves, spends its window, then
// commits. A writer whose context ends in the window returns the
// context's error and leaves its slot reserved and empty: a later write
// commits above it, readers get a HoleError naming it, and only a seal
// fills it (a noop naming the sealer), freeing its key. A writer whose slot
// a reader seals in its window gets an *eventlog.SealedError. Both writers
// are held in their windows (worldtest.Holder) while the test cancels one
// and seals the other's slot, so neither lands outside the window.
func TestSlotWindow(t *testing.T) {
	hold := worldtest.NewHolder()
	w := openWorld(t, vercel.Config{Latency: hold})
	run := worldtest.NewRun(t, w, eventlog.Run{Scheme: eventlog.SchemeSlot})
	gone := worldtest.Draft(eventlog.StepCompleted, "gone")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	hold.Hold(1)
	ended := appendAsync(ctx, w, run, gone)
	held := hold.Next(t, "the append of gone in its window")
	cancel()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("Append whose context ended in the window = %v, want its context's error", err)
	}
	if err := held.Ended(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("the server's window of the abandoned append ended with %v, want the request's cancellation", err)
	}
	next, err := w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, "next")})
	if err != nil || next[0].Seq != 2 {
		t.Fatalf("Append after the abandoned one = %+v, %v; want slot 2", next, err)
	}
	var he *eventlog.HoleError
	if _, err := w.List(t.Context(), run, eventlog.Cursor{}, 0); !errors.As(err, &he) || he.RunID != run || he.Slot != 1 || he.Above != 2 {
		t.Fatalf("List across the abandoned slot = %v, want HoleError{%s, 1, 2}", err, run)
	}
	noop, sealed, err := w.Seal(worlds.WithActor(t.Context(), "reader"), run, 1)
	if err != nil || !sealed || noop.Seq != 1 || noop.Type != eventlog.Noop {
		t.Fatalf("Seal(1) = %+v, %v, %v", noop, sealed, err)
	}
	if !strings.Contains(string(noop.Payload), `"sealedBy":"reader"`) {
		t.Fatalf("noop payload %s, want sealedBy reader", noop.Payload)
	}
	p, err := w.List(t.Context(), run, eventlog.Cursor{}, 0)
	if err != nil || len(p.Events) != 2 || p.Events[0].ID != noop.ID || p.Events[1].ID != next[0].ID {
		t.Fatalf("List after the seal = %+v, %v; want the noop and slot 2", p.Events, err)
	}
	if again, err := w.Append(t.Context(), run, []eventlog.Draft{gone}); err != nil || again[0].Seq != 3 {
		t.Fatalf("re-append of the abandoned draft = %+v, %v; want slot 3 (its key released by the seal)", again, err)
	}

	hold.Hold(1)
	done := appendAsync(worlds.WithActor(t.Context(), "writer"), w, run, worldtest.Draft(eventlog.StepCompleted, "void"))
	held = hold.Next(t, "the append of void in its window")
	_, sealed, err = w.Seal(worlds.WithActor(t.Context(), "reader"), run, 4)
	held.Release()
	if err != nil || !sealed {
		t.Fatalf("Seal(4) in the writer's window = %v, %v; want the reserved slot sealed", sealed, err)
	}
	var se *eventlog.SealedError
	if err := <-done; !errors.As(err, &se) || se.RunID != run || se.Slot != 4 {
		t.Fatalf("Append whose slot was sealed in its window = %v, want SealedError{%s, 4}", err, run)
	}
	cts, err := w.CommitTimes(t.Context(), run)
	if err != nil || len(cts) != 4 {
		t.Fatalf("CommitTimes = %+v, %v; want 4", cts, err)
	}
	for i, ct := range cts {
		if ct.Seq != int64(i+1) || ct.At.IsZero() {
			t.Fatalf("commit time %d = %+v: want slot %d, observed by the server", i, ct, i+1)
		}
	}
}

// appendAsync appends d in the background; the channel gets its error.
func appendAsync(ctx context.Context, w *vercel.World, run string, d eventlog.Draft) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := w.Append(ctx, run, []eventlog.Draft{d})
		done <- err
	}()
	return done
}

// TestStatusMapping: the client maps each error answer of the slot and
// read endpoints to the contract's typed error, run id and positions
// included, against a server that answers with canned bodies.
func TestStatusMapping(t *testing.T) {
	var answer atomic.Pointer[[2]string] // status, body
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		a := answer.Load()
		status, _ := strconv.Atoi(a[0])
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(a[1]))
	}))
	defer srv.Close()
	w, err := vercel.Open(t.Context(), vercel.Config{IngestURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const run = "wrun_canned"
	tests := []struct {
		name, status, body string
		op                 func() error
		check              func(error) bool
	}{
		{"sealed commit", "409", `{"error":"x","code":"sealed","slot":7}`,
			func() error { _, err := w.Commit(t.Context(), worlds.Reservation{RunID: run, First: 6}); return err },
			func(err error) bool {
				var se *eventlog.SealedError
				return errors.As(err, &se) && se.RunID == run && se.Slot == 7 && errors.Is(err, eventlog.ErrSealed)
			}},
		{"sealed append", "409", `{"error":"x","code":"sealed","slot":3}`,
			func() error { _, err := w.Append(t.Context(), run, nil); return err },
			func(err error) bool { var se *eventlog.SealedError; return errors.As(err, &se) && se.Slot == 3 }},
		{"hole", "409", `{"error":"x","code":"hole","slot":2,"above":5}`,
			func() error { _, err := w.List(t.Context(), run, eventlog.Cursor{}, 0); return err },
			func(err error) bool {
				var he *eventlog.HoleError
				return errors.As(err, &he) && he.RunID == run && he.Slot == 2 && he.Above == 5 && eventlog.Classify(err) == "hole"
			}},
		{"gap", "409", `{"error":"x","code":"gap","want":4,"got":6}`,
			func() error { _, err := w.List(t.Context(), run, eventlog.Cursor{}, 0); return err },
			func(err error) bool {
				var ge *eventlog.GapError
				return errors.As(err, &ge) && ge.RunID == run && ge.Want == 4 && ge.Got == 6
			}},
		{"gap at an unpositioned event", "409", `{"error":"x","code":"gap","want":4,"got":0}`,
			func() error { _, err := w.List(t.Context(), run, eventlog.Cursor{}, 0); return err },
			func(err error) bool {
				var ge *eventlog.GapError
				return errors.As(err, &ge) && ge.Want == 4 && ge.Got == 0
			}},
		{"duplicate", "409", `{"error":"x","code":"duplicate","seq":9}`,
			func() error { _, err := w.List(t.Context(), run, eventlog.Cursor{}, 0); return err },
			func(err error) bool {
				var de *eventlog.DuplicateError
				return errors.As(err, &de) && de.RunID == run && de.Seq == 9
			}},
		{"reserve conflict", "409", `{"error":"x","code":"conflict","key":"step_created/a"}`,
			func() error { _, err := w.Reserve(t.Context(), run, nil); return err },
			func(err error) bool {
				var ce *eventlog.ConflictError
				return errors.As(err, &ce) && ce.Key == "step_created/a"
			}},
		{"not reserved", "409", `{"error":"slot 1 is committed already","code":"not_reserved"}`,
			func() error { _, err := w.Commit(t.Context(), worlds.Reservation{RunID: run}); return err },
			func(err error) bool {
				return eventlog.Classify(err) == "other" && strings.Contains(err.Error(), "committed already")
			}},
		{"fenced reserve", "412", `{"error":"x","code":"fenced","expected":1,"actual":3}`,
			func() error { _, err := w.AppendFenced(t.Context(), run, 1, nil); return err },
			func(err error) bool {
				var fe *eventlog.FencedError
				return errors.As(err, &fe) && fe.Expected == 1 && fe.Actual == 3
			}},
		{"no slot", "404", `{"error":"slot never reserved","code":"no_slot"}`,
			func() error { _, _, err := w.Seal(t.Context(), run, 9); return err },
			func(err error) bool { return err != nil && eventlog.Classify(err) == "other" }},
		{"seal of an unknown run", "404", `{"error":"x","code":"no_run"}`,
			func() error { _, _, err := w.Seal(t.Context(), run, 1); return err },
			func(err error) bool { return errors.Is(err, eventlog.ErrNoRun) }},
		{"seal unavailable", "503", `{"error":"x","code":"unavailable"}`,
			func() error { _, _, err := w.Seal(t.Context(), run, 1); return err },
			func(err error) bool { return errors.Is(err, eventlog.ErrUnavailable) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer.Store(&[2]string{tt.status, tt.body})
			if err := tt.op(); !tt.check(err) {
				t.Fatalf("HTTP %s %s mapped to %v (%T)", tt.status, tt.body, err, err)
			}
		})
	}
}
