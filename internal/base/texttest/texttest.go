// Package texttest reads and checks the short texts that tests are written
// in: line-oriented fixtures (one item a line, as STYLE asks of expected
// histories), split into numbered lines of words, and rendered output that
// must hold given pieces in a given order.
package texttest

import (
	"os"
	"strings"
	"testing"
)

// Line is one item of a fixture: its words and its line number (from 1).
type Line struct {
	N     int
	Words []string
}

// Lines splits a fixture into its items: one a line, words split on white
// space, '#' starting a comment that runs to the end of its line. Blank and
// comment-only lines are left out; N keeps each item's line in text, for
// messages that point at it.
func Lines(text string) []Line {
	var out []Line
	for i, line := range strings.Split(text, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		if words := strings.Fields(line); len(words) > 0 {
			out = append(out, Line{N: i + 1, Words: words})
		}
	}
	return out
}

// InOrder fails t unless got holds every piece of want, each after the end
// of the one before it. what names got in the message ("stdout").
func InOrder(t testing.TB, what, got string, want []string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("%s lacks %q after byte %d:\n%s", what, w, at, got)
		}
		at += i + len(w)
	}
}

// Golden compares got with the golden file at path, failing t with both
// when they differ; with update it rewrites the file instead (the test's
// -update flag).
func Golden(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s--- want\n%s", path, got, want)
	}
}
