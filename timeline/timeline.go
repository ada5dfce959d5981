// Package timeline draws one explained run as a self-contained HTML page.
package timeline

import (
	"io"

	"github.com/stormctl/stormctl/explain"
)

// MaxBytes is the hard cap on a timeline file.
const MaxBytes = 2 << 20

// Write draws the run in to w, at most max bytes.
func Write(w io.Writer, in explain.Input, ex explain.Explanation, max int) error { return nil }
