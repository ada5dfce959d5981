package texttest_test

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/stormctl/stormctl/internal/base/texttest"
)

func TestLines(t *testing.T) {
	tests := []struct {
		name, text string
		want       []texttest.Line
	}{
		{"empty", "", nil},
		{"blank and comment lines are left out", "\n  \n# a comment\n\t# indented\n", nil},
		{"words, with their line numbers", "# head\nscheme  seq\n\nevent e01\tseq=1\n",
			[]texttest.Line{{N: 2, Words: []string{"scheme", "seq"}}, {N: 4, Words: []string{"event", "e01", "seq=1"}}}},
		{"a comment ends the line", "want gaps=1 # the hole\nlast", []texttest.Line{
			{N: 1, Words: []string{"want", "gaps=1"}}, {N: 2, Words: []string{"last"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := texttest.Lines(tc.text); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Lines(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
		})
	}
}

// fatalRecorder is a testing.TB whose Fatalf records that it was called
// and stops the calling goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(string, ...any) {
	r.failed = true
	runtime.Goexit()
}

func TestInOrder(t *testing.T) {
	const out = "claim  verdict\nPASS a\nFAIL b\nfidelity: 1 of 2\n"
	tests := []struct {
		name     string
		want     []string
		wantFail bool
	}{
		{"nothing wanted", nil, false},
		{"pieces in order", []string{"claim", "PASS", "FAIL b", "fidelity: "}, false},
		{"a piece twice, as often as it is there", []string{"a", "a"}, false},
		{"pieces out of order", []string{"FAIL", "PASS"}, true},
		{"a piece missing", []string{"PASS", "unknown"}, true},
		{"a piece more often than it is there", []string{"FAIL", "FAIL"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &fatalRecorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				texttest.InOrder(r, "output", out, tc.want)
			}()
			<-done
			if r.failed != tc.wantFail {
				t.Errorf("InOrder(%q) failed: %v, want %v", tc.want, r.failed, tc.wantFail)
			}
		})
	}
}
