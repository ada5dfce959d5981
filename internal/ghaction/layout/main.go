// Command layout writes stormctl's GitHub action and workflows into DIR as
// a repository actionlint checks whole (package ghaction says what it
// holds). .ci/run runs it:
//
//	go run ./internal/ghaction/layout DIR && cd DIR && actionlint .github/workflows/*.yml
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/stormctl/stormctl/internal/ghaction"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/ghaction/layout DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
}

// run lays out the repository this runs in (the module's root, found from
// the working directory) under dir.
func run(dir string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	files, err := ghaction.Layout(root)
	if err != nil {
		return err
	}
	return files.Write(dir)
}

// moduleRoot is the nearest directory at or above the working directory
// holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod at or above the working directory")
		}
		dir = parent
	}
}
