package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stormctl/stormctl/internal/cli"
)

func TestFormatSet(t *testing.T) {
	for _, in := range []string{"table", "markdown", "json"} {
		var f cli.Format
		if err := f.Set(in); err != nil || f.String() != in {
			t.Errorf("Set(%q): %q, %v", in, f, err)
		}
	}
	for _, in := range []string{"", "xml", "JSON", " json", "md"} {
		f := cli.FormatTable
		err := f.Set(in)
		var ue *cli.UsageError
		if !errors.As(err, &ue) {
			t.Fatalf("Set(%q) = %v, want a *UsageError", in, err)
		}
		if want := fmt.Sprintf("invalid --format %q (valid: table, markdown, json)", in); err.Error() != want {
			t.Errorf("Set(%q) = %q, want %q", in, err, want)
		}
		if f != cli.FormatTable {
			t.Errorf("Set(%q) changed the format to %q", in, f)
		}
	}
}

// TestFormatFlags: every command with --format declares it the one way:
// default table, every format in its help, every format completed.
func TestFormatFlags(t *testing.T) {
	f, _, _ := testFactory()
	var want []string
	for _, format := range cli.Formats() {
		want = append(want, string(format))
	}
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		fl := c.Flags().Lookup("format")
		if fl == nil {
			return
		}
		n++
		if fl.DefValue != "table" || fl.Value.Type() != "format" {
			t.Errorf("%s --format: default %q, type %q; want table, format", c.CommandPath(), fl.DefValue, fl.Value.Type())
		}
		for _, w := range want {
			if !strings.Contains(fl.Usage, w) {
				t.Errorf("%s --format help %q does not list %s", c.CommandPath(), fl.Usage, w)
			}
		}
		complete, ok := c.GetFlagCompletionFunc("format")
		if !ok {
			t.Errorf("%s --format completes nothing", c.CommandPath())
			return
		}
		if got, _ := complete(c, nil, ""); !slices.Equal(got, want) {
			t.Errorf("%s --format completes %q, want %q", c.CommandPath(), got, want)
		}
	}
	walk(cli.NewCmdRoot(f))
	if n < 13 {
		t.Errorf("%d commands have --format, want every printing command (13)", n)
	}
}

// twoWays prints "table" or "markdown" in many unchecked writes, and has no
// JSON of its own.
type twoWays struct {
	Name string `json:"name"`
}

func (v twoWays) Table(w io.Writer) error    { return v.write(w, "table") }
func (v twoWays) Markdown(w io.Writer) error { return v.write(w, "markdown") }

func (v twoWays) write(w io.Writer, s string) error {
	for _, c := range s {
		fmt.Fprintf(w, "%c", c)
	}
	return nil
}

// failAfter accepts n writes, then fails.
type failAfter struct {
	n   int
	out bytes.Buffer
}

var errFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errFull
	}
	f.n--
	return f.out.Write(p)
}

func TestPrint(t *testing.T) {
	for format, want := range map[cli.Format]string{
		cli.FormatTable:    "table",
		cli.FormatMarkdown: "markdown",
		cli.FormatJSON:     "{\n  \"name\": \"x\"\n}\n",
	} {
		var b bytes.Buffer
		if err := format.Print(&b, twoWays{Name: "x"}); err != nil || b.String() != want {
			t.Errorf("%s: %q, %v; want %q", format, b.String(), err, want)
		}
		n := 2 // JSON is written in one write
		if format == cli.FormatJSON {
			n = 0
		}
		w := &failAfter{n: n}
		err := format.Print(w, twoWays{Name: "x"})
		if w.out.String() != want[:n] {
			t.Errorf("%s: wrote %q, want %q and nothing after the failed write", format, w.out.String(), want[:n])
		}
		if !errors.Is(err, errFull) || !strings.Contains(err.Error(), string(format)) {
			t.Errorf("%s: Print to a writer that fails = %v, want the write's error naming the format", format, err)
		}
	}
}
