package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/ghaction"
)

// commentData holds two real storms (local world, step-storm, hook-storm
// and control under main and seq+callsite+ordered, 6 runs a cell, run one
// after the other on one machine; storm.json, runs.jsonl and summary.json
// of each), the gates' JSON on storm, previous.md (first.golden's
// comment: the comment before this storm's), forged.md (a hand-written
// body whose history must not be carried on), and partial (storm split
// as --shard 1/2 and 2/2, merged with shard 2/2's runs.jsonl empty, as a
// shard that failed before its first run leaves it) with its gate's JSON,
// gate-partial.json (the action's target rules).
var commentData = filepath.Join("testdata", "comment")

// commentGolden is a golden file of testdata/comment: its first line is the
// command ("# stormctl ARGS", run in testdata/comment), then the exit code,
// stdout and stderr.
type commentGolden struct {
	path, head string
}

func commentGoldens(t *testing.T) []commentGolden {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(commentData, "*.golden"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files in %s: %v", commentData, err)
	}
	var gs []commentGolden
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		head, _, _ := strings.Cut(string(b), "\n")
		if !strings.HasPrefix(head, "# stormctl comment ") {
			t.Fatalf("%s: the first line %q is not # stormctl comment ARGS", p, head)
		}
		gs = append(gs, commentGolden{path: p, head: head})
	}
	return gs
}

// runGolden runs the golden's command in testdata/comment and renders what
// it did as the golden file has it.
func runGolden(t *testing.T, g commentGolden) (text, stdout string) {
	t.Helper()
	t.Chdir(commentData)
	code, stdout, stderr := run(t.Context(), strings.Fields(strings.TrimPrefix(g.head, "# stormctl "))...)
	return g.head + "\nexit " + strconv.Itoa(code) + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr, stdout
}

// TestCommentGolden: stormctl comment prints, on stored storms, what its
// golden files hold (go test ./internal/cli -run TestCommentGolden -update
// rewrites them, and previous.md as first.golden's comment).
func TestCommentGolden(t *testing.T) {
	for _, g := range commentGoldens(t) {
		name := strings.TrimSuffix(filepath.Base(g.path), ".golden")
		t.Run(name, func(t *testing.T) {
			abs, err := filepath.Abs(g.path)
			if err != nil {
				t.Fatal(err)
			}
			got, stdout := runGolden(t, g)
			if *update {
				writeFile(t, abs, []byte(got))
				if name == "first" {
					writeFile(t, "previous.md", []byte(stdout))
				}
				return
			}
			if want := string(readFile(t, abs)); got != want {
				t.Errorf("stormctl %s differs from %s:\n%s", strings.TrimPrefix(g.head, "# stormctl "), g.path, lineDiff(want, got))
			}
			if name == "first" {
				if prev := readFile(t, "previous.md"); !bytes.Equal(prev, []byte(stdout)) {
					t.Errorf("previous.md is not first.golden's comment:\n%s", lineDiff(stdout, string(prev)))
				}
			}
		})
	}
}

// TestActionDocShowsTheComment: the example comment of each document
// showing the worked example (docs/github-action.md) is what
// stormctl comment prints for its golden file's command (-update rewrites
// it).
func TestActionDocShowsTheComment(t *testing.T) {
	for _, d := range ghaction.ExampleDocs() {
		t.Run(d.Path, func(t *testing.T) {
			doc, err := filepath.Abs(filetest.Repo(d.Path))
			if err != nil {
				t.Fatal(err)
			}
			b := readFile(t, doc)
			start := regexp.MustCompile(`(?m)^<!-- example-comment: internal/cli/testdata/comment/([a-z-]+\.golden) -->\n`)
			const end = "<!-- /example-comment -->\n"
			m := start.FindSubmatchIndex(b)
			if m == nil {
				t.Fatalf("%s has no line <!-- example-comment: internal/cli/testdata/comment/NAME.golden -->", d.Path)
			}
			n := bytes.Index(b[m[1]:], []byte(end))
			if n < 0 {
				t.Fatalf("%s: the example comment has no end line %q", d.Path, end)
			}
			golden := filepath.Join(commentData, string(b[m[2]:m[3]]))
			head, _, _ := strings.Cut(string(readFile(t, golden)), "\n")
			_, stdout := runGolden(t, commentGolden{path: golden, head: head})
			shown := string(b[m[1] : m[1]+n])
			if *update {
				writeFile(t, doc, append(append(b[:m[1]:m[1]], stdout...), b[m[1]+n:]...))
				return
			}
			if shown != stdout {
				t.Errorf("%s's example comment is not what %s prints:\n%s", d.Path, strings.TrimPrefix(head, "# "), lineDiff(stdout, shown))
			}
		})
	}
}
