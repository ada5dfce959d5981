package certify

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

// checkTimeout bounds one conformance check: past it the check is UNKNOWN
// (its goroutine is left to end with its context).
const checkTimeout = 3 * time.Minute

// RunSuite runs the conformance suite's checks of entry's world, one after
// another, each opening fresh worlds through entry.Open (closed when the
// check ends), and returns a Result per check: PASS when it ran to its end
// without a failure, FAIL with its first failure's message, SKIP with the
// reason it gave (a limit the world declares, an ability it lacks),
// UNKNOWN when it did not end within checkTimeout or panicked in stormctl.
func RunSuite(ctx context.Context, entry worlds.Entry, progress io.Writer) ([]Result, error) {
	checks, err := worldtest.Checks(entry, func(t testing.TB, opts worlds.Options) worlds.World {
		t.Helper()
		w, err := entry.Open(t.Context(), opts)
		if err != nil {
			t.Fatalf("open world %q: %v", entry.Name, err)
		}
		t.Cleanup(func() {
			if err := w.Close(); err != nil {
				t.Errorf("close world %q: %v", entry.Name, err)
			}
		})
		return withRuns(w, entry.Limits)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(checks))
	for _, c := range checks {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		name := string(c.Scheme) + "/" + c.Name
		r := runCheck(ctx, name, c.Run)
		r.Detail = typeNames.Replace(r.Detail)
		if progress != nil {
			fmt.Fprintf(progress, "certify: conformance %s: %s\n", name, r.Verdict)
		}
		out = append(out, r)
	}
	return out, nil
}

// typeNames names the wrappers the suite's messages name by type (%T)
// as what they are to the reader of a card.
var typeNames = strings.NewReplacer("*certify.runsWorld", "the package's world", "certify.runsWorldClock", "the package's world")

// runCheck runs one check on a fresh runner and judges it.
func runCheck(ctx context.Context, name string, f func(testing.TB)) Result {
	tmp, err := os.MkdirTemp("", "stormctl-certify-")
	if err != nil {
		return Decide(Conformance, name, Evidence{Err: fmt.Errorf("%w: %v", ErrMachine, err)})
	}
	defer os.RemoveAll(tmp)
	t := newRunner(ctx, name, tmp)
	done := t.start(f)
	select {
	case <-done:
	case <-time.After(checkTimeout):
		t.cancel()
		return Decide(Conformance, name, Evidence{Err: fmt.Errorf("did not end within %s", checkTimeout)})
	}
	return t.result()
}

// runner is a testing.TB of certify's: it records the check's first
// failure and its skip, runs its cleanups when it ends, and its subtests
// (worldtest.Runner) one at a time. The embedded testing.TB is nil: every
// method of the interface is its own, so none is ever called.
type runner struct {
	testing.TB

	name   string
	dir    string
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	failed   bool
	first    string // the first failure's message
	skipped  bool
	skip     string
	panicked string
	cleanups []func()
	tmps     int
	// subs counts the subtests run; skips those that skipped, the first
	// with reason subSkip.
	subs, skips int
	subSkip     string
}

var _ worldtest.Runner = (*runner)(nil)

func newRunner(ctx context.Context, name, dir string) *runner {
	ctx, cancel := context.WithCancel(ctx)
	return &runner{name: name, dir: dir, ctx: ctx, cancel: cancel}
}

// start runs f on t in a goroutine of its own (FailNow and SkipNow end it
// with runtime.Goexit), then t's cleanups, and closes the channel.
func (t *runner) start(f func(testing.TB)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer t.cancel()
		defer t.runCleanups()
		defer func() {
			if p := recover(); p != nil {
				t.mu.Lock()
				t.panicked = fmt.Sprintf("panic: %v\n%s", p, debug.Stack())
				t.mu.Unlock()
			}
		}()
		f(t)
	}()
	return done
}

func (t *runner) runCleanups() {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		c := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("cleanup panicked: %v", p)
				}
			}()
			c()
		}()
	}
}

// result judges the ended check.
func (t *runner) result() Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.panicked != "":
		return Result{Section: Conformance, Name: t.name, Verdict: Unknown, Detail: "the check panicked in stormctl: " + firstLineOf(t.panicked), Layer: "harness"}
	case t.failed:
		return Result{Section: Conformance, Name: t.name, Verdict: Fail, Detail: t.first, Layer: "world"}
	case t.skipped:
		return Result{Section: Conformance, Name: t.name, Verdict: Skip, Detail: t.skip}
	case t.subs > 0 && t.skips == t.subs:
		// Every subtest skipped: nothing was checked.
		return Result{Section: Conformance, Name: t.name, Verdict: Skip, Detail: t.subSkip}
	case t.skips > 0:
		return Result{Section: Conformance, Name: t.name, Verdict: Pass,
			Detail: fmt.Sprintf("%d of %d cases ran to their end without a failure; skipped: %s", t.subs-t.skips, t.subs, t.subSkip)}
	}
	return Result{Section: Conformance, Name: t.name, Verdict: Pass, Detail: "ran to its end without a failure"}
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Sub runs f as subtest name of t, to its end, and says whether it passed;
// its failure is t's (its message prefixed with its name), its skip only
// its own.
func (t *runner) Sub(name string, f func(testing.TB)) bool {
	c := newRunner(t.ctx, t.name+"/"+name, t.TempDir())
	<-c.start(f)
	c.mu.Lock()
	failed, first, panicked, skipped, skip := c.failed, c.first, c.panicked, c.skipped, c.skip
	c.mu.Unlock()
	t.mu.Lock()
	t.subs++
	if skipped && !failed {
		t.skips++
		if t.subSkip == "" {
			t.subSkip = name + ": " + skip
		}
	}
	t.mu.Unlock()
	if panicked != "" {
		failed, first = true, panicked
	}
	if failed {
		t.fail(name + ": " + first)
	}
	return !failed
}

func (t *runner) fail(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.failed {
		t.failed, t.first = true, strings.TrimSpace(msg)
	}
}

// ArtifactDir returns a directory of the check's.
func (t *runner) ArtifactDir() string { return t.TempDir() }

// Attr is dropped.
func (t *runner) Attr(string, string) {}

// Chdir is refused: a check must not move the process.
func (t *runner) Chdir(dir string) { t.Fatalf("certify: Chdir(%s): not supported", dir) }

// Cleanup registers f to run when the check ends, last first.
func (t *runner) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// Context is the check's context, cancelled before its cleanups run.
func (t *runner) Context() context.Context { return t.ctx }

// Error records a failure.
func (t *runner) Error(args ...any) { t.fail(fmt.Sprintln(args...)) }

// Errorf records a failure.
func (t *runner) Errorf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }

// Fail marks the check failed.
func (t *runner) Fail() { t.fail("failed") }

// FailNow marks the check failed and ends its goroutine.
func (t *runner) FailNow() {
	t.fail("failed")
	runtime.Goexit()
}

// Failed reports whether the check failed.
func (t *runner) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// Fatal records a failure and ends the check's goroutine.
func (t *runner) Fatal(args ...any) {
	t.fail(fmt.Sprintln(args...))
	runtime.Goexit()
}

// Fatalf records a failure and ends the check's goroutine.
func (t *runner) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

// Helper does nothing.
func (t *runner) Helper() {}

// Log drops what the check logs.
func (t *runner) Log(...any) {}

// Logf drops what the check logs.
func (t *runner) Logf(string, ...any) {}

// Name is the check's name.
func (t *runner) Name() string { return t.name }

// Output discards.
func (t *runner) Output() io.Writer { return io.Discard }

// Setenv is refused: a check must not change the process's environment.
func (t *runner) Setenv(key, _ string) { t.Fatalf("certify: Setenv(%s): not supported", key) }

// Skip records the reason and ends the check's goroutine.
func (t *runner) Skip(args ...any) { t.skipNow(strings.TrimSpace(fmt.Sprintln(args...))) }

// Skipf records the reason and ends the check's goroutine.
func (t *runner) Skipf(format string, args ...any) { t.skipNow(fmt.Sprintf(format, args...)) }

// SkipNow ends the check's goroutine as skipped.
func (t *runner) SkipNow() { t.skipNow("skipped") }

func (t *runner) skipNow(reason string) {
	t.mu.Lock()
	if !t.skipped {
		t.skipped, t.skip = true, reason
	}
	t.mu.Unlock()
	runtime.Goexit()
}

// Skipped reports whether the check skipped.
func (t *runner) Skipped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}

// TempDir returns a fresh directory under the check's.
func (t *runner) TempDir() string {
	t.mu.Lock()
	t.tmps++
	n := t.tmps
	t.mu.Unlock()
	dir := fmt.Sprintf("%s/%03d", t.dir, n)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("certify: TempDir: %v", err)
	}
	return dir
}
