package mdlinks_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/base/mdlinks"
)

// repoRoot is the repository's root, from this package's directory.
var repoRoot = filetest.Repo()

// repoPages are README.md and every markdown page under docs/.
func repoPages(t *testing.T) (readme string, docs []string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			docs = append(docs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no markdown pages under docs/")
	}
	return filepath.Join(repoRoot, "README.md"), docs
}

// TestRepoLinksResolve: every relative link of README.md and docs/ names a
// file or directory of the repository, and every #anchor a heading of its
// page.
func TestRepoLinksResolve(t *testing.T) {
	readme, docs := repoPages(t)
	problems, err := mdlinks.Check(repoRoot, append([]string{readme}, docs...))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestRepoDocsReachable: every page under docs/ can be reached from
// README.md by following links (directly, or through an index).
func TestRepoDocsReachable(t *testing.T) {
	readme, docs := repoPages(t)
	unreached, err := mdlinks.Unreached(repoRoot, readme, docs)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range unreached {
		t.Errorf("%s: no link leads to it from README.md (link it from README.md or docs/README.md)", p)
	}
}
