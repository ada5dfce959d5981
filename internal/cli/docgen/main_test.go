package main

import (
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/clidoc"
	"github.com/stormctl/stormctl/internal/base/filetest"
)

// TestReferenceIsCurrent fails while docs/cli is not exactly what the
// commands' help makes: a flag, example or help text changed without the
// reference, a command added or removed. CI runs it with go test ./...
func TestReferenceIsCurrent(t *testing.T) {
	pages := clidoc.Pages(rootCmd())
	if len(pages) < 2 {
		t.Fatalf("the command tree made %d pages", len(pages))
	}
	drift, err := clidoc.Check(filetest.Repo(refDir), pages)
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) > 0 {
		var lines []string
		for _, d := range drift {
			lines = append(lines, "  "+d.String())
		}
		t.Fatalf("the CLI reference in %s is out of date with the commands; run\n  %s\nand commit %s:\n%s",
			refDir, Regenerate, refDir, strings.Join(lines, "\n"))
	}
}
