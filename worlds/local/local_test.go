package local_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// schemes are the local world's schemes, as its entry lists them.
var schemes = worldtest.Schemes(local.Entry())

// open opens a world on dir and closes it when the test ends.
func open(t *testing.T, dir string, seed uint64, lat worlds.Profile) *local.World {
	t.Helper()
	w, err := local.Open(t.Context(), worlds.Options{Dir: dir, Seed: seed, Latency: lat})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// openRun opens a world in a fresh dir and creates the run there under
// scheme s.
func openRun(t *testing.T, s eventlog.Scheme, run string) (dir string, w *local.World) {
	t.Helper()
	dir = t.TempDir()
	w = open(t, dir, 1, nil)
	worldtest.NewRun(t, w, eventlog.Run{ID: run, Scheme: s})
	return dir, w
}

// damaged writes three events to a fresh run of scheme s, lets damage break
// the files in dir, and returns a second world on dir, with nothing cached.
func damaged(t *testing.T, s eventlog.Scheme, run string, damage func(t *testing.T, dir, run string, evs []eventlog.Event)) *local.World {
	t.Helper()
	dir, w := openRun(t, s, run)
	evs := worldtest.Append(t, w, run, worldtest.Draft(eventlog.StepStarted, "a"), worldtest.Draft(eventlog.StepCompleted, "a"), worldtest.Draft(eventlog.StepCreated, "b"))
	damage(t, dir, run, evs)
	return open(t, dir, 2, nil)
}

func TestConformance(t *testing.T) { worldtest.Exercise(t, local.Entry(), nil) }

func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name()
	}
	return out
}

func TestLayout(t *testing.T) {
	for _, s := range schemes {
		t.Run(string(s), func(t *testing.T) {
			run := "wrun_layout"
			dir, w := openRun(t, s, run)
			evs := worldtest.Append(t, w, run, worldtest.Draft(eventlog.StepStarted, "a"), worldtest.Draft(eventlog.StepCompleted, "a"))
			hook := eventlog.Draft{Type: eventlog.HookCreated, CorrelationID: "h", Token: "tok"}
			evs = append(evs, worldtest.AppendFenced(t, w, run, 2, worldtest.Draft(eventlog.StepCreated, "b"), hook)...)

			var rec eventlog.Run
			filetest.ReadJSON(t, filepath.Join(dir, "runs", run+".json"), &rec)
			if rec != (eventlog.Run{ID: run, Scheme: s}) {
				t.Errorf("runs/%s.json holds %+v", run, rec)
			}
			var wantEvents, wantKeys []string
			for _, e := range evs {
				name := run + "-" + e.ID + ".json"
				wantEvents = append(wantEvents, name)
				var got eventlog.Event
				filetest.ReadJSON(t, filepath.Join(dir, "events", run, name), &got)
				if got.ID != e.ID || got.Seq != e.Seq || got.Type != e.Type || got.CommittedAt.IsZero() {
					t.Errorf("events/%s holds %+v, want event %s@%d", name, got, e.ID, e.Seq)
				}
				for _, k := range e.Draft().Keys() {
					sum := sha256.Sum256([]byte(k))
					wantKeys = append(wantKeys, hex.EncodeToString(sum[:]))
				}
			}
			slices.Sort(wantEvents)
			slices.Sort(wantKeys)
			if got := names(t, filepath.Join(dir, "events", run)); !slices.Equal(got, wantEvents) {
				t.Errorf("events/ holds %v, want %v", got, wantEvents)
			}
			if got := names(t, filepath.Join(dir, "keys", run)); !slices.Equal(got, wantKeys) {
				t.Errorf("keys/%s holds %v, want %v", run, got, wantKeys)
			}
			if got := names(t, filepath.Join(dir, "tmp")); len(got) != 0 {
				t.Errorf("tmp/ holds %v, want nothing", got)
			}
			wantRuns, wantLocks := []string{run + ".json"}, []string{}
			switch s {
			case eventlog.SchemeSeq:
				wantRuns, wantLocks = []string{run + ".json", run + ".seq"}, []string{run + ".lock"}
				var c struct {
					Committed int64 `json:"committed_seq"`
					Fenced    int64 `json:"fenced_seq"`
				}
				filetest.ReadJSON(t, filepath.Join(dir, "runs", run+".seq"), &c)
				if c.Committed != 4 || c.Fenced != 4 {
					t.Errorf("runs/%s.seq holds %+v, want committed 4, fenced 4", run, c)
				}
			case eventlog.SchemeSlot:
				wantRuns, wantLocks = []string{run + ".json", run + ".slot"}, []string{run + ".lock"}
				var tbl map[string]any
				filetest.ReadJSON(t, filepath.Join(dir, "runs", run+".slot"), &tbl)
				if want := map[string]any{"states": "cccc"}; !maps.Equal(tbl, want) {
					t.Errorf("runs/%s.slot holds %v, want %v (four committed slots, nothing held)", run, tbl, want)
				}
			}
			if got := names(t, filepath.Join(dir, "runs")); !slices.Equal(got, wantRuns) {
				t.Errorf("runs/ holds %v, want %v", got, wantRuns)
			}
			if got := names(t, filepath.Join(dir, "locks")); !slices.Equal(got, wantLocks) {
				t.Errorf("locks/ holds %v, want %v", got, wantLocks)
			}
		})
	}
}

// TestNoTempFilesInEvents runs concurrent writers, conflicts, fence
// rejections and cancelled writes, then checks that events/ holds only event
// files and tmp/ nothing.
func TestNoTempFilesInEvents(t *testing.T) {
	for _, s := range schemes {
		t.Run(string(s), func(t *testing.T) {
			run := "wrun_tmp"
			dir, w := openRun(t, s, run)
			var g errgroup.Group
			for i := range 4 {
				g.Go(func() error {
					for j := range 10 {
						d := worldtest.Draft(eventlog.StepCompleted, fmt.Sprintf("c%d_%d", i, j))
						if _, err := w.Append(t.Context(), run, []eventlog.Draft{d}); err != nil {
							return err
						}
						if _, err := w.Append(t.Context(), run, []eventlog.Draft{d}); !errors.Is(err, eventlog.ErrConflict) {
							return fmt.Errorf("repeated append = %v, want a conflict", err)
						}
						stale := []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "x")}
						if _, err := w.AppendFenced(t.Context(), run, -1, stale); !errors.Is(err, eventlog.ErrFenced) {
							return fmt.Errorf("fenced append at -1 = %v, want fenced", err)
						}
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			slow := open(t, dir, 2, worldtest.Latency(t, "fixed:1h"))
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if _, err := slow.Append(ctx, run, []eventlog.Draft{worldtest.Draft(eventlog.StepCreated, "late")}); !errors.Is(err, context.Canceled) {
				t.Fatalf("Append with a cancelled context = %v, want context.Canceled", err)
			}
			file := regexp.MustCompile(`^` + run + `-evnt_[0-9A-HJKMNP-TV-Z]{26}\.json$`) // a ULID or a slot id
			got := names(t, filepath.Join(dir, "events", run))
			for _, n := range got {
				if !file.MatchString(n) {
					t.Errorf("events/ holds %q, not an event file", n)
				}
			}
			if len(got) != 40 {
				t.Errorf("events/ holds %d files, want 40", len(got))
			}
			if tmp := names(t, filepath.Join(dir, "tmp")); len(tmp) != 0 {
				t.Errorf("tmp/ holds %v, want nothing", tmp)
			}
		})
	}
}

// TestSecondHandleSameDir: two Worlds on one directory stand for two
// processes. Their writers interleave on one seq run; flock keeps the log
// dense and the fence exact: every accepted fenced append landed right after
// the position its writer expected.
func TestSecondHandleSameDir(t *testing.T) {
	dir := t.TempDir()
	handles := []*local.World{open(t, dir, 1, nil), open(t, dir, 2, nil)}
	run := "wrun_shared"
	worldtest.NewRun(t, handles[0], eventlog.Run{ID: run, Scheme: eventlog.SchemeSeq})

	const perHandle, perWriter = 4, 20
	var (
		mu   sync.Mutex
		seen []eventlog.Event
	)
	var g errgroup.Group
	for h, w := range handles {
		for wr := range perHandle {
			g.Go(func() error {
				for i := range perWriter {
					corr := fmt.Sprintf("h%d_w%d_%02d", h, wr, i)
					var evs []eventlog.Event
					var err error
					if i%2 == 0 {
						evs, err = w.Append(t.Context(), run, []eventlog.Draft{worldtest.Draft(eventlog.StepCompleted, corr)})
					} else {
						evs, err = fencedRetry(t.Context(), w, run, worldtest.Draft(eventlog.StepCreated, corr))
					}
					if err != nil {
						return fmt.Errorf("handle %d writer %d: %w", h, wr, err)
					}
					mu.Lock()
					seen = append(seen, evs...)
					mu.Unlock()
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	want := 2 * perHandle * perWriter
	logs := [][]eventlog.Event{worldtest.ListAll(t, handles[0], run), worldtest.ListAll(t, handles[1], run)}
	for h, log := range logs {
		if len(log) != want {
			t.Fatalf("handle %d reads %d events, want %d", h, len(log), want)
		}
		if err := eventlog.CheckDensity(run, 0, log); err != nil {
			t.Fatalf("handle %d: %v", h, err)
		}
	}
	for i := range logs[0] {
		if logs[0][i].ID != logs[1][i].ID {
			t.Fatalf("handles disagree at seq %d: %s vs %s", i+1, logs[0][i].ID, logs[1][i].ID)
		}
	}
	for _, e := range seen {
		if got := logs[0][e.Seq-1]; got.ID != e.ID {
			t.Fatalf("append returned %s@%d, the log holds %s there", e.ID, e.Seq, got.ID)
		}
	}
}

// fencedRetry appends d fenced at the log's length, retrying when fenced, and
// checks the accepted event landed right after the expected position.
func fencedRetry(ctx context.Context, w worlds.World, runID string, d eventlog.Draft) ([]eventlog.Event, error) {
	for range 10000 {
		p, err := w.List(ctx, runID, eventlog.Cursor{}, 0)
		if err != nil {
			return nil, err
		}
		n := int64(len(p.Events))
		evs, err := w.AppendFenced(ctx, runID, n, []eventlog.Draft{d})
		if errors.Is(err, eventlog.ErrFenced) {
			continue
		}
		if err == nil && evs[0].Seq != n+1 {
			return nil, fmt.Errorf("fenced append expected %d events and landed at seq %d", n, evs[0].Seq)
		}
		return evs, err
	}
	return nil, errors.New("fenced append rejected 10000 times")
}
