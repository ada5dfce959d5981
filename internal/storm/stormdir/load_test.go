package stormdir_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
)

// storedWant is a testdata/storms/*/want.json: what LoadStorm must make of
// the directory beside it.
type storedWant struct {
	// Cells are "world/scenario/condition: N runs: compact", in order.
	Cells []string `json:"cells"`
	// Problems are contained, one each, in the error's *ArtifactErrors;
	// Notes likewise in Stored.Notes.
	Problems []string `json:"problems"`
	Notes    []string `json:"notes"`
}

func TestLoadStorm(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "storms", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no storm fixtures: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var want storedWant
			filetest.ReadJSON(t, filepath.Join(dir, "want.json"), &want)
			st, err := stormdir.LoadStorm(dir)
			if st == nil {
				t.Fatalf("stormdir.LoadStorm = nil, %v", err)
			}
			var got []string
			for _, c := range st.Summary.Cells {
				got = append(got, fmt.Sprintf("%s: %d runs: %s", c.Key(), c.Runs, c.Compact()))
			}
			if !slices.Equal(got, want.Cells) {
				t.Errorf("cells =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want.Cells, "\n"))
			}

			var problems []string
			for _, e := range unjoin(err) {
				var ae *stormdir.ArtifactError
				if !errors.As(e, &ae) {
					t.Errorf("problem %v is not an *stormdir.ArtifactError", e)
				}
				// Name files relative to the fixture, as a user reads them.
				problems = append(problems, strings.TrimPrefix(e.Error(), dir+string(filepath.Separator)))
			}
			matchEach(t, "problem", problems, want.Problems)
			matchEach(t, "note", st.Notes, want.Notes)
			// Meta is storm.json read whole, or nil when it could not be
			// (a cell listed twice is read, then named).
			stormBad := slices.ContainsFunc(problems, func(p string) bool {
				return strings.HasPrefix(p, stormdir.FileStorm) && !strings.Contains(p, "listed twice")
			})
			if stormBad != (st.Meta == nil) || st.Meta != nil && len(st.Meta.Cells) == 0 {
				t.Errorf("Meta = %#v with storm.json problems %v", st.Meta, stormBad)
			}
		})
	}
	t.Run("not a storm", func(t *testing.T) {
		st, err := stormdir.LoadStorm(t.TempDir())
		if st != nil || !errors.Is(err, stormdir.ErrNotStorm) {
			t.Errorf("stormdir.LoadStorm(empty dir) = %v, %v; want nil, stormdir.ErrNotStorm", st, err)
		}
	})
}

// unjoin splits an errors.Join into its errors.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// matchEach checks that got has one item per want, each containing it.
func matchEach(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d %ss, want %d:\n%s", len(got), what, len(want), strings.Join(got, "\n"))
		return
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("%s %d = %q, want it to contain %q", what, i+1, got[i], want[i])
		}
	}
}
