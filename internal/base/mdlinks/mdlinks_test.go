package mdlinks_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/mdlinks"
)

func TestSlug(t *testing.T) {
	t.Parallel()
	tests := []struct{ heading, want string }{
		{"Exit codes", "exit-codes"},
		{"Faults (--nemesis)", "faults---nemesis"},
		{"`storm` flags", "storm-flags"},
		{"Report, compare, gate, shards", "report-compare-gate-shards"},
		{"The DevKit's own packages (devkit-local, devkit-postgres)", "the-devkits-own-packages-devkit-local-devkit-postgres"},
		{"Measured: the packages beside our worlds", "measured-the-packages-beside-our-worlds"},
		{"A [linked](x.md) heading", "a-linked-heading"},
		{"runs_jsonl and 2026-12-03", "runs_jsonl-and-2026-12-03"},
	}
	for _, tc := range tests {
		if got := mdlinks.Slug(strings.ReplaceAll(tc.heading, "`", "")); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchors(t *testing.T) {
	t.Parallel()
	text := "# Top\n\n## Measured\n\n```\n## Not a heading\n```\n\n### Measured\n\n<a id=\"here\"></a>\n## `code` heading ##\n"
	got := mdlinks.Anchors(text)
	for _, want := range []string{"top", "measured", "measured-1", "here", "code-heading"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a heading inside a code block made an anchor")
	}
}

func TestLinks(t *testing.T) {
	t.Parallel()
	text := "see [a](a.md) and [b](b.md#x \"title\") and `[c](c.md)`\n" +
		"```\n[d](d.md)\n```\n" +
		"![img](p.png) [e]: e.md\n[f]: f.md\n" +
		"`` [g](g.md) `` and [h](https://example.com)\n"
	var got []string
	for _, l := range mdlinks.Links(text) {
		got = append(got, l.Target)
	}
	want := []string{"a.md", "b.md#x", "p.png", "f.md", "https://example.com"}
	if !slices.Equal(got, want) {
		t.Errorf("Links = %v, want %v (none in code)", got, want)
	}
}

// write makes files under a temp root and returns the root.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		page string // docs/page.md
		want []string
	}{
		{"good links", "[x](other.md) [y](other.md#part-two) [z](#here) [w](../README.md) [d](sub/) [r](/docs/other.md) [web](https://example.com/nope)\n## Here\n", nil},
		{"missing file", "[x](nope.md)\n", []string{"nope.md: no such file"}},
		{"missing anchor", "[x](other.md#part-three)\n", []string{"other.md#part-three: "}},
		{"missing anchor in the same page", "[x](#nowhere)\n# Somewhere\n", []string{"#nowhere: "}},
		{"a link in code is not checked", "`[x](nope.md)`\n```\n[y](nope.md)\n```\n", nil},
		{"escaped path", "[x](other%2Emd)\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := write(t, map[string]string{
				"README.md":          "# Front\n",
				"docs/other.md":      "# Other\n## Part two\n",
				"docs/sub/README.md": "# Sub\n",
				"docs/page.md":       tc.page,
			})
			problems, err := mdlinks.Check(root, []string{filepath.Join(root, "docs/page.md")})
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != len(tc.want) {
				t.Fatalf("problems %v, want %d", problems, len(tc.want))
			}
			for i, p := range problems {
				if !strings.Contains(p.String(), tc.want[i]) {
					t.Errorf("problem %q, want it to contain %q", p, tc.want[i])
				}
			}
		})
	}
}

func TestUnreached(t *testing.T) {
	t.Parallel()
	root := write(t, map[string]string{
		"README.md":         "[docs](docs/) [a](docs/a.md#x)\n",
		"docs/README.md":    "[b](b.md)\n",
		"docs/a.md":         "nothing\n",
		"docs/b.md":         "[c](deep/c.md)\n",
		"docs/deep/c.md":    "[back](../../README.md)\n",
		"docs/orphan.md":    "[a](a.md)\n",
		"docs/notlinked.md": "",
	})
	var files []string
	for _, f := range []string{"docs/README.md", "docs/a.md", "docs/b.md", "docs/deep/c.md", "docs/orphan.md", "docs/notlinked.md"} {
		files = append(files, filepath.Join(root, f))
	}
	got, err := mdlinks.Unreached(root, filepath.Join(root, "README.md"), files)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "docs/orphan.md"), filepath.Join(root, "docs/notlinked.md")}
	if !slices.Equal(got, want) {
		t.Errorf("Unreached = %v, want %v", got, want)
	}
}
