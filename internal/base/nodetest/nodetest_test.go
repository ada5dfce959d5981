package nodetest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a helper ended the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own, as a test's
// Skipf and Fatalf end theirs.
func run(f func(testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestNeedSkipsOrFails(t *testing.T) {
	for _, tt := range []struct {
		name, env            string
		bins                 []string
		wantSkip, wantFailed string
	}{
		{"present", "", []string{"sh"}, "", ""},
		{"missing, skipped", "", []string{"sh", "no-such-binary-stormctl"}, "needs no-such-binary-stormctl", ""},
		{"missing, required", "1", []string{"no-such-binary-stormctl"}, "", "STORMCTL_REQUIRE_NODE=1, and this test cannot run: needs no-such-binary-stormctl"},
		{"missing, other value", "yes", []string{"no-such-binary-stormctl"}, "needs no-such-binary-stormctl", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(Env, tt.env)
			r := run(func(tb testing.TB) { Need(tb, tt.bins...) })
			if !strings.Contains(r.skipped, tt.wantSkip) || (tt.wantSkip == "") != (r.skipped == "") {
				t.Errorf("skipped %q, want it to say %q", r.skipped, tt.wantSkip)
			}
			if !strings.HasPrefix(r.failed, tt.wantFailed) || (tt.wantFailed == "") != (r.failed == "") {
				t.Errorf("failed %q, want %q", r.failed, tt.wantFailed)
			}
		})
	}
}
