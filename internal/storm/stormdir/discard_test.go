package stormdir_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
)

// TestDiscardLeavesWhatWasThere checks that a storm that measured nothing
// removes what it wrote and no more: the directory when it made it, the
// user's own files in a directory it did not.
func TestDiscardLeavesWhatWasThere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		existing []string // files in the directory before the storm (nil: no directory)
		want     []string // what is left after Discard (nil: no directory)
	}{
		{"a directory the storm made", nil, nil},
		{"an empty directory of the user's", []string{}, []string{}},
		{"a directory with the user's notes", []string{"notes.txt"}, []string{"notes.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "out")
			if tc.existing != nil {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for _, f := range tc.existing {
					if err := os.WriteFile(filepath.Join(dir, f), []byte("mine\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			w, err := stormdir.OpenWriter(dir, &stormdir.Meta{Schema: reports.SchemaVersion})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Discard(); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if tc.want == nil {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("the directory the storm made is still there (%d entries, %v)", len(entries), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, e := range entries {
				left = append(left, e.Name())
			}
			if !slices.Equal(left, tc.want) && !(len(left) == 0 && len(tc.want) == 0) {
				t.Errorf("left %v, want %v", left, tc.want)
			}
		})
	}
}
