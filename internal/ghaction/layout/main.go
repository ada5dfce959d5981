// Command layout writes stormctl's GitHub action and workflows into DIR as
// a repository actionlint checks whole (package ghaction says what it
// holds). .ci/run runs it from the repository's root:
//
//	go run ./internal/ghaction/layout DIR && cd DIR && actionlint .github/workflows/*.yml
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/stormctl/stormctl/internal/ghaction"
)

func main() {
	root := flag.String("root", ".", "the repository to lay out (its root)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/ghaction/layout [-root REPO] DIR")
		os.Exit(2)
	}
	files, err := ghaction.Layout(*root)
	if err == nil {
		err = files.Write(flag.Arg(0))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "layout:", err)
		os.Exit(1)
	}
}
