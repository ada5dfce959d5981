// Command stormctl storms durable-workflow event logs and reports whether
// they stay ordered. See README.md.
package main

import (
	"os"

	"github.com/stormctl/stormctl/internal/cli"
)

func main() { os.Exit(cli.Main()) }
