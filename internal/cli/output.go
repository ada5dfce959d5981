package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/stormctl/stormctl/reports/table"
)

// Format is how a command prints its result: the value of every --format
// flag. As a pflag.Value it refuses any other value while the flags are
// parsed, naming the valid ones.
type Format string

// The formats every command prints in.
const (
	// FormatTable is for a terminal: tables and plain lines.
	FormatTable Format = "table"
	// FormatMarkdown is for a PR description or a CI step summary.
	FormatMarkdown Format = "markdown"
	// FormatJSON is for a pipeline: the result's JSON document.
	FormatJSON Format = "json"
)

// Formats are the valid formats, in the order help and messages list them.
func Formats() []Format { return []Format{FormatTable, FormatMarkdown, FormatJSON} }

// formatNames are the formats as text.
func formatNames() []string {
	var names []string
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return names
}

// String returns the format's name.
func (f *Format) String() string { return string(*f) }

// Set parses a --format value; an invalid one is bad usage whose message
// is the whole flag error (see flagError).
func (f *Format) Set(s string) error {
	if !slices.Contains(Formats(), Format(s)) {
		return usage("invalid --format %q (valid: %s)", s, strings.Join(formatNames(), ", "))
	}
	*f = Format(s)
	return nil
}

// Type names the flag's value in help.
func (f *Format) Type() string { return "format" }

// addFormatFlag declares --format on cmd into p, defaulting to table. Its
// help lists every format, each followed by notes[format] where this
// command needs to say what that format prints; a shell completes the
// formats.
func addFormatFlag(cmd *cobra.Command, p *Format, notes map[Format]string) {
	var items []string
	for _, f := range Formats() {
		item := string(f)
		if n := notes[f]; n != "" {
			item += " (" + n + ")"
		}
		items = append(items, item)
	}
	last := len(items) - 1
	help := "output: " + strings.Join(items[:last], ", ") + " or " + items[last]
	*p = FormatTable
	cmd.Flags().Var(p, "format", help)
	if err := cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(formatNames(), cobra.ShellCompDirectiveNoFileComp)); err != nil {
		panic(fmt.Sprintf("--format of %s: %v", cmd.Name(), err)) // declared just above: only a second declaration gets here
	}
}

// Printable is a command's result as every format prints it. Its JSON is
// its own encoding, unless it has a JSON method (jsonPrintable).
type Printable interface {
	// Table writes it for a terminal (--format table).
	Table(w io.Writer) error
	// Markdown writes it for a PR or a CI step summary (--format markdown).
	Markdown(w io.Writer) error
}

// jsonPrintable is a Printable whose JSON document is not its own encoding
// (an adapter printing another value), or is written its own way.
type jsonPrintable interface {
	JSON(w io.Writer) error
}

// styled is a Printable whose table and markdown differ only in the
// tables' style: write draws it in a style; its JSON is doc.
type styled struct {
	doc   any
	write func(io.Writer, table.Style) error
}

// Table draws it with boxed tables.
func (s styled) Table(w io.Writer) error { return s.write(w, table.Boxed) }

// Markdown draws it with markdown tables.
func (s styled) Markdown(w io.Writer) error { return s.write(w, table.Markdown) }

// JSON writes doc.
func (s styled) JSON(w io.Writer) error { return writeJSON(w, s.doc) }

// Print writes v to w in format f. Every write is checked: the first that
// fails ends the output and is returned.
func (f Format) Print(w io.Writer, v Printable) error {
	sw := &stickyWriter{w: w}
	var err error
	switch f {
	case FormatJSON:
		if j, ok := v.(jsonPrintable); ok {
			err = j.JSON(sw)
		} else {
			err = writeJSON(sw, v)
		}
	case FormatMarkdown:
		err = v.Markdown(sw)
	default:
		err = v.Table(sw)
	}
	if err == nil {
		err = sw.err
	}
	if err != nil {
		return fmt.Errorf("print the %s output: %w", f, err)
	}
	return nil
}

// writeJSON writes v as indented JSON, as every --format json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stickyWriter passes writes on to w until one fails, then fails every
// later write with that error, which err keeps: a printer's many small
// writes are checked once, at the end.
type stickyWriter struct {
	w   io.Writer
	err error
}

// Write writes p to w unless an earlier write failed.
func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}
