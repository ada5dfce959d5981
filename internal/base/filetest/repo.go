package filetest

import (
	"os"
	"path/filepath"
)

// Repo returns the path of a file or directory of this repository, given
// from its root (the directory holding go.mod), as seen from the test's
// working directory: tests name shared fixtures and documents by where they
// live, not by how many folders up they are, so moving a package moves none
// of its paths. Outside a module it returns the parts joined, which the
// test's read then fails on, naming the path.
func Repo(parts ...string) string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join(parts...)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, filepath.Join(append([]string{d}, parts...)...))
			if err != nil {
				return filepath.Join(append([]string{d}, parts...)...)
			}
			return rel
		}
		if filepath.Dir(d) == d {
			return filepath.Join(parts...)
		}
	}
}
