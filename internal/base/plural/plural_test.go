package plural_test

import (
	"testing"

	"github.com/stormctl/stormctl/internal/base/plural"
)

func TestCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		noun string
		want string
	}{
		{0, "rule", "0 rules"},
		{1, "rule", "1 rule"},
		{2, "cell", "2 cells"},
		{-1, "run", "-1 runs"},
		{1000, "event", "1000 events"},
	}
	for _, tc := range tests {
		if got := plural.Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}

func TestWord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		want string
	}{
		{0, "runs hold"},
		{1, "run holds"},
		{2, "runs hold"},
	}
	for _, tc := range tests {
		if got := plural.Word(tc.n, "run holds", "runs hold"); got != tc.want {
			t.Errorf("Word(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
