package shrink_test

import (
	"errors"
	"flag"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/base/texttest"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/evidence"
	"github.com/stormctl/stormctl/internal/tools/shrink"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// storedStorm is a storm recorded by an earlier build whose step-storm
// run under main is corrupted (and whose control runs completed).
var storedStorm = filetest.Repo("internal", "storm", "stormdir", "testdata", "schema1")

// storedInputs reads every run of storedStorm as shrink's input.
func storedInputs(t testing.TB) []shrink.Input {
	t.Helper()
	dir, err := stormdir.Open(storedStorm)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := dir.Runs()
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs: %d, %v", len(runs), err)
	}
	var out []shrink.Input
	for _, rec := range runs {
		r, err := evidence.Load(storedStorm, rec.RunID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, shrink.Input{Input: r.ReplayInput(), Scenario: rec.Scenario})
	}
	return out
}

// TestShrinkStoredRun: the recorded corrupted run shrinks to a minimal
// schedule (testdata/schema1-stepstorm.golden: its text, then its
// narrative) whose text, executed strictly, still raises the recorded
// error; the Go test written for it (testdata/schema1-stepstorm.go.golden)
// parses and calls Reproduce on the embedded schedule. A run that wrote
// no run_failed cannot be shrunk.
func TestShrinkStoredRun(t *testing.T) {
	t.Parallel()
	shrunk := 0
	for _, in := range storedInputs(t) {
		res, err := shrink.Shrink(t.Context(), in, shrink.Options{})
		if in.Outcome != history.Corrupted {
			var ue *shrink.UnshrinkableError
			if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "no invocation of it wrote a run_failed") {
				t.Errorf("%s (%s): Shrink = %v, want unshrinkable", in.RunID, in.Outcome, err)
			}
			continue
		}
		shrunk++
		if err != nil {
			t.Fatalf("%s: %v", in.RunID, err)
		}
		if !res.Minimal || res.After.Invocations >= res.Before.Invocations || res.After.Events >= res.Before.Events || res.Error != in.Detail {
			t.Errorf("%s: minimal %v, %+v -> %+v, error %q", in.RunID, res.Minimal, res.Before, res.After, res.Error)
		}
		var rep *shrink.Reproduction
		if err := shrink.Reproduce(t.Context(), res.Text); !errors.As(err, &rep) || rep.Divergence != in.Detail || rep.Actor != res.Failing {
			t.Errorf("Reproduce(the shrunk schedule) = %v, want %s raising %q", err, res.Failing, in.Detail)
		}
		src, err := shrink.GoTest("repro", in.RunID+".txt", "schema1, "+in.Cell, res)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "repro_test.go", src, 0); err != nil {
			t.Errorf("the Go test does not parse: %v\n%s", err, src)
		}
		texttest.Golden(t, filepath.Join("testdata", "schema1-stepstorm.golden"), res.Text+"---\n"+strings.Join(res.Narrative, "\n")+"\n", *update)
		texttest.Golden(t, filepath.Join("testdata", "schema1-stepstorm.go.golden"), string(src), *update)
	}
	if shrunk == 0 {
		t.Fatalf("%s holds no corrupted run", storedStorm)
	}
}

// TestShrinkBudget: a budget too short for a single candidate still
// gives a failing case, said not minimal, and returns at once: the
// recorded schedule without what nobody reads or writes (invocations that
// wrote nothing, facts nobody read).
func TestShrinkBudget(t *testing.T) {
	t.Parallel()
	for _, in := range storedInputs(t) {
		if in.Outcome != history.Corrupted {
			continue
		}
		started := time.Now()
		res, err := shrink.Shrink(t.Context(), in, shrink.Options{Budget: time.Nanosecond})
		if err != nil {
			t.Fatal(err)
		}
		b, a := res.Before, res.After
		if res.Minimal || a.Invocations > b.Invocations || a.Events > b.Events || a.Reads > b.Reads || time.Since(started) > 10*time.Second {
			t.Errorf("minimal %v, %+v -> %+v, in %s", res.Minimal, res.Before, res.After, time.Since(started))
		}
		var rep *shrink.Reproduction
		if err := shrink.Reproduce(t.Context(), res.Text); !errors.As(err, &rep) || rep.Divergence != in.Detail {
			t.Errorf("Reproduce(the recorded schedule) = %v, want %q", err, in.Detail)
		}
	}
}

// TestReproduce: a schedule that does not parse, names no known scenario
// or does not execute strictly is an error other than a Reproduction; one
// whose failing invocation no longer diverges reproduces nothing.
func TestReproduce(t *testing.T) {
	t.Parallel()
	const head = "run wrun_x\nscenario step-storm\nscheme ulid\nwake engine\noutcome corrupted\ndetail replay divergence: x\n"
	for _, tc := range []struct {
		name, text, err string
	}{
		{"not a schedule", "hello\n", "parse the schedule"},
		{"unknown scenario", strings.Replace(head, "step-storm", "nope", 1), "the schedule's scenario"},
		{"does not execute", head + "list inv-1 after=- at=1 read=e09\n", "execute the schedule"},
		{"no divergence", head + `start e01 at=0 payload={"rounds":1,"width":1,"scale":1,"seed":1}` + "\nlist inv-1 after=- at=1 read=e01\nfail inv-1 e02 at=2\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := shrink.Reproduce(t.Context(), tc.text)
			var rep *shrink.Reproduction
			switch {
			case errors.As(err, &rep):
				t.Errorf("Reproduce = %v, want no reproduction", err)
			case tc.err == "" && err != nil, tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("Reproduce = %v, want %q", err, tc.err)
			}
		})
	}
}
