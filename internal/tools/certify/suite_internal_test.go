package certify

import (
	"testing"

	"github.com/stormctl/stormctl/worlds/worldtest"
)

// TestRunCheck: the runner judges a check by what it did: a failure is
// FAIL with its first message (Fatalf ends the check), a skip is SKIP, a
// check whose every case skipped is SKIP (nothing was checked), a panic is
// UNKNOWN, and only a check that ran to its end passes.
func TestRunCheck(t *testing.T) {
	for _, tt := range []struct {
		name   string
		check  func(testing.TB)
		want   Verdict
		detail string
	}{
		{"passes", func(t testing.TB) {}, Pass, "ran to its end without a failure"},
		{"fatal ends it", func(t testing.TB) {
			t.Fatalf("first %d", 1)
			t.Errorf("never reached")
		}, Fail, "first 1"},
		{"first error wins", func(t testing.TB) {
			t.Errorf("one")
			t.Errorf("two")
		}, Fail, "one"},
		{"skips", func(t testing.TB) { t.Skipf("no %s", "clock") }, Skip, "no clock"},
		{"every case skipped", func(t testing.TB) {
			worldtest.Run(t, "a", func(t testing.TB) { t.Skip("why a") })
			worldtest.Run(t, "b", func(t testing.TB) { t.Skip("why b") })
		}, Skip, "a: why a"},
		{"some cases skipped", func(t testing.TB) {
			worldtest.Run(t, "a", func(t testing.TB) { t.Skip("why a") })
			worldtest.Run(t, "b", func(t testing.TB) {})
		}, Pass, "1 of 2 cases ran to their end without a failure; skipped: a: why a"},
		{"a case fails", func(t testing.TB) {
			worldtest.Run(t, "a", func(t testing.TB) { t.Fatal("bad") })
		}, Fail, "a: bad"},
		{"cleanup runs and may fail", func(t testing.TB) {
			t.Cleanup(func() { t.Errorf("close failed") })
		}, Fail, "close failed"},
		{"panic", func(t testing.TB) { panic("oops") }, Unknown, "the check panicked in stormctl: panic: oops"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCheck(t.Context(), "x", tt.check)
			if r.Verdict != tt.want || r.Detail != tt.detail {
				t.Errorf("runCheck = %s %q, want %s %q", r.Verdict, r.Detail, tt.want, tt.detail)
			}
		})
	}
}
