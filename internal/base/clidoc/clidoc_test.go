package clidoc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/base/clidoc"
)

// tree is a small command tree: a root, a runnable child with a flag and an
// example, a parent of one grandchild, and a hidden command.
func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool", Long: "The tool does things.", Version: "v9"}
	run := &cobra.Command{Use: "run DIR", Short: "Run it", Long: "Run it\n  indented", Example: "  tool run x\n  tool run y", RunE: func(*cobra.Command, []string) error { return nil }}
	run.Flags().Int("runs", 24, "runs per cell")
	root.PersistentFlags().String("format", "table", "output format")
	parent := &cobra.Command{Use: "bench", Short: "Benchmarks"}
	parent.AddCommand(&cobra.Command{Use: "append", Short: "Append bench", RunE: func(*cobra.Command, []string) error { return nil }})
	hidden := &cobra.Command{Use: "secret", Short: "Hidden", Hidden: true, RunE: func(*cobra.Command, []string) error { return nil }}
	root.AddCommand(run, parent, hidden)
	return root
}

func page(t *testing.T, pages []clidoc.Page, name string) string {
	t.Helper()
	for _, p := range pages {
		if p.Name == name {
			return string(p.Body)
		}
	}
	t.Fatalf("no page %s", name)
	return ""
}

func TestPages(t *testing.T) {
	t.Parallel()
	pages := clidoc.Pages(tree())
	var names []string
	for _, p := range pages {
		names = append(names, p.Name)
	}
	if got, want := strings.Join(names, " "), "tool.md tool_bench.md tool_bench_append.md tool_run.md"; got != want {
		t.Fatalf("pages %s, want %s (hidden commands have none)", got, want)
	}
	tests := []struct {
		page string
		want []string // in order
	}{
		{"tool.md", []string{clidoc.Header, "# tool", "A tool", "The tool does things.", "## Commands",
			"- [tool bench](tool_bench.md): Benchmarks", "- [tool run](tool_run.md): Run it", "--format string", "-v, --version"}},
		{"tool_run.md", []string{"# tool run", "```text\nRun it\n  indented\n```", "## Usage", "tool run DIR [flags]",
			"## Examples", "```sh\ntool run x\ntool run y\n```", "## Flags", "-h, --help", "--runs int", "runs per cell (default 24)",
			"## Flags inherited from parent commands", "--format string", "## See also", "- [tool](tool.md): A tool"}},
		{"tool_bench.md", []string{"# tool bench", "- [tool bench append](tool_bench_append.md): Append bench", "- [tool](tool.md)"}},
		{"tool_bench_append.md", []string{"# tool bench append", "- [tool bench](tool_bench.md): Benchmarks"}},
	}
	for _, tc := range tests {
		t.Run(tc.page, func(t *testing.T) {
			t.Parallel()
			body := page(t, pages, tc.page)
			rest := body
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("%s lacks %q after what came before:\n%s", tc.page, w, body)
				}
				rest = rest[i+len(w):]
			}
		})
	}
	if strings.Contains(page(t, pages, "tool_bench.md"), "## Usage") {
		t.Error("a command that does not run has a usage line")
	}
	if strings.Contains(page(t, pages, "tool.md"), "v9") {
		t.Error("the version is in a page: a build's stamp would make the reference drift")
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	pages := clidoc.Pages(tree())
	tests := []struct {
		name  string
		spoil func(dir string) error
		want  []string // drift lines, in order
	}{
		{"as written", func(string) error { return nil }, nil},
		{"a page edited", func(dir string) error {
			f := filepath.Join(dir, "tool_run.md")
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			return os.WriteFile(f, []byte(strings.Replace(string(b), "runs per cell", "runs per cel", 1)), 0o644)
		}, []string{"tool_run.md: differs at line"}},
		{"a page removed", func(dir string) error { return os.Remove(filepath.Join(dir, "tool_bench_append.md")) },
			[]string{"tool_bench_append.md: missing"}},
		{"a page no command has", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "tool_gone.md"), []byte(clidoc.Header+"\n\n# tool gone\n"), 0o644)
		}, []string{"tool_gone.md: stale"}},
		{"a hand-written file beside the pages", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# notes\n"), 0o644)
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "cli")
			if err := clidoc.Write(dir, pages); err != nil {
				t.Fatal(err)
			}
			if err := tc.spoil(dir); err != nil {
				t.Fatal(err)
			}
			drift, err := clidoc.Check(dir, pages)
			if err != nil {
				t.Fatal(err)
			}
			if len(drift) != len(tc.want) {
				t.Fatalf("drift %v, want %d: %v", drift, len(tc.want), tc.want)
			}
			for i, d := range drift {
				if !strings.HasPrefix(d.String(), tc.want[i]) {
					t.Errorf("drift %q, want it to start %q", d, tc.want[i])
				}
			}
			// Writing again repairs every drift and keeps hand-written files.
			if err := clidoc.Write(dir, pages); err != nil {
				t.Fatal(err)
			}
			if drift, err := clidoc.Check(dir, pages); err != nil || len(drift) != 0 {
				t.Fatalf("after Write: drift %v, err %v", drift, err)
			}
		})
	}
}

func TestCheckMissingDirectory(t *testing.T) {
	t.Parallel()
	drift, err := clidoc.Check(filepath.Join(t.TempDir(), "none"), clidoc.Pages(tree()))
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) != 4 {
		t.Fatalf("drift %v, want every page missing", drift)
	}
}
