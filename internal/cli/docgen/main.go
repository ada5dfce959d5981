// Command docgen writes stormctl's CLI reference, docs/cli/, one markdown
// page per command, from the cobra commands themselves (what --help
// prints). Run it from anywhere in the repository after changing a
// command's help, flags or examples:
//
//	go run ./internal/cli/docgen
//
// TestReferenceIsCurrent (this package) fails while docs/cli differs from
// what the commands make, so CI's go test catches a reference left behind.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/base/clidoc"
	"github.com/stormctl/stormctl/internal/cli"
)

//go:generate go run .

// Regenerate is the command that rewrites the reference.
const Regenerate = "go run ./internal/cli/docgen"

// refDir is the reference's directory, relative to the module's root.
const refDir = "docs/cli"

func main() {
	out := flag.String("out", "", "directory to write the pages to (default: docs/cli of the module this runs in)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	if out == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		out = filepath.Join(root, refDir)
	}
	pages := clidoc.Pages(rootCmd())
	if err := clidoc.Write(out, pages); err != nil {
		return err
	}
	fmt.Printf("docgen: wrote %d pages to %s\n", len(pages), out)
	return nil
}

// rootCmd is stormctl's command tree as users get it. The version is fixed:
// it is not in any page, and a build's stamp must not make one differ.
func rootCmd() *cobra.Command {
	f := cli.NewFactory()
	f.Version = "docgen"
	return cli.NewCmdRoot(f)
}

// moduleRoot is the nearest directory above the working directory holding
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run docgen inside the repository, or give -out")
		}
		dir = parent
	}
}
