package devkitworld_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// stepDrafts are a run's run_created, n step_created and the first step's
// step_started and step_completed: writes of four types the package takes.
func stepDrafts(n int) []eventlog.Draft {
	d := []eventlog.Draft{{Type: eventlog.RunCreated, Payload: json.RawMessage(`{"n":1}`)}}
	for i := range n {
		d = append(d, eventlog.Draft{Type: eventlog.StepCreated, CorrelationID: fmt.Sprintf("step_%d", i),
			Payload: json.RawMessage(`{"name":"a","args":1}`)})
	}
	return append(d, eventlog.Draft{Type: eventlog.StepStarted, CorrelationID: "step_0"},
		eventlog.Draft{Type: eventlog.StepCompleted, CorrelationID: "step_0", Payload: json.RawMessage(`{"result":1}`)})
}

// appendRun creates a run on w and appends drafts to it.
func appendRun(t *testing.T, w worlds.World, drafts []eventlog.Draft) {
	t.Helper()
	run := "wrun_" + ulid.Make().String()
	if err := w.CreateRun(t.Context(), eventlog.Run{ID: run, Scheme: eventlog.SchemeULID}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(t.Context(), run, drafts); err != nil {
		t.Fatal(err)
	}
}

// TestWindowSpent: with a latency profile every write of every type has
// its window spent, in the hook of its package (world-local's event file,
// world-postgres's INSERT), and SelfCheck passes; without one no write
// asks and nothing is counted.
func TestWindowSpent(t *testing.T) {
	for _, k := range []devkitworld.Kind{devkitworld.Local, devkitworld.Postgres} {
		t.Run(string(k), func(t *testing.T) {
			hook := map[devkitworld.Kind]string{devkitworld.Local: devkitworld.HookEventsFile, devkitworld.Postgres: devkitworld.HookEventsInsert}[k]
			w := openWith(t, k, worlds.Options{Dir: t.TempDir(), Latency: worldtest.Latency(t, "fixed:2ms")})
			drafts := stepDrafts(devkitworld.WindowCheckAfter)
			appendRun(t, w, drafts)
			got := w.Windows()
			want := map[eventlog.Type]int{}
			for _, d := range drafts {
				want[d.Type]++
			}
			for typ, n := range want {
				if c := got[typ]; c.Asked != n || c.Spent[hook] != n || len(c.Spent) != 1 {
					t.Errorf("%s: %+v, want %d asked, all spent in %s", typ, c, n, hook)
				}
			}
			if err := w.SelfCheck(); err != nil {
				t.Errorf("SelfCheck: %v", err)
			}

			none := openWith(t, k, worlds.Options{Dir: t.TempDir()})
			appendRun(t, none, drafts)
			if got := none.Windows(); len(got) != 0 {
				t.Errorf("without a latency profile: windows %+v, want none asked", got)
			}
		})
	}
}

// TestWindowNotSpentInChangedPackage runs a world-local whose version
// writes its event files otherwise than the sidecar's hook knows (a copy of
// the published package with fs.writeFile turned into fs.appendFile, as a
// new version might): the writes go through, no window is spent, and
// after WindowCheckAfter writes of a type SelfCheck fails with a
// *WindowError naming the package and its version.
func TestWindowNotSpentInChangedPackage(t *testing.T) {
	open(t, devkitworld.Local) // the published packages, installed (or skipped)
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("skipping: no cache directory: %v", err)
	}
	l, err := sidecar.Install(t.Context(), cache, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	changed := filepath.Join(dir, "packages", "world-local")
	if err := os.CopyFS(changed, os.DirFS(l.Local)); err != nil {
		t.Fatal(err)
	}
	// Its dependencies are the published package's (node_modules beside it).
	if err := os.Symlink(filepath.Dir(filepath.Dir(l.Local)), filepath.Join(changed, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(l.Postgres, filepath.Join(dir, "packages", "world-postgres")); err != nil {
		t.Fatal(err)
	}
	edit := func(file, old, new string) {
		t.Helper()
		p := filepath.Join(changed, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Skipf("skipping: the published %s no longer holds %q to change", file, old)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), old, new)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit(filepath.Join("dist", "fs.js"), "fs.writeFile(tempPath", "fs.appendFile(tempPath")
	var pkg map[string]any
	b, err := os.ReadFile(filepath.Join(changed, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		t.Fatal(err)
	}
	edit("package.json", fmt.Sprintf("%q", pkg["version"]), `"0.0.0-changed"`)

	h := devkitworld.NewHost(devkitworld.Config{Dir: dir, CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Error(err)
		}
	})
	w, err := devkitworld.Open(t.Context(), h, devkitworld.Local, worlds.Options{Dir: t.TempDir(), Latency: worldtest.Latency(t, "fixed:2ms")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })

	appendRun(t, w, stepDrafts(devkitworld.WindowCheckAfter-1))
	if err := w.SelfCheck(); err != nil {
		t.Fatalf("SelfCheck after %d writes of a type: %v, want nil (too few to judge)", devkitworld.WindowCheckAfter-1, err)
	}
	appendRun(t, w, stepDrafts(1))
	if c := w.Windows()[eventlog.StepCreated]; c.Asked != devkitworld.WindowCheckAfter || c.Spent["none"] != c.Asked {
		t.Errorf("step_created windows %+v, want %d asked, none spent", c, devkitworld.WindowCheckAfter)
	}
	err = w.SelfCheck()
	var we *devkitworld.WindowError
	if !errors.As(err, &we) || !errors.Is(err, devkitworld.ErrWindowNotSpent) {
		t.Fatalf("SelfCheck = %v, want a *WindowError", err)
	}
	if we.Package != "@workflow/world-local" || we.Version != "0.0.0-changed" || we.Type != eventlog.StepCreated {
		t.Errorf("WindowError %+v, want @workflow/world-local 0.0.0-changed, step_created", we)
	}
	t.Log(err)
}
