package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/base/nettest"
	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
)

// readme is the front page: TestMainJobDurationAgrees reads its "What it
// prints".
var readme = filetest.Repo("README.md")

// badInputsDoc is the page whose "Bad inputs" table TestBadInputs runs: its
// golden file.
var badInputsDoc = filetest.Repo("docs", "exit-codes.md")

var update = flag.Bool("update", false, "rewrite the golden files with what stormctl prints: docs/exit-codes.md's bad-inputs table (TestBadInputs), testdata/comment (TestCommentGolden)")

// badInput is one row of the bad-inputs table.
type badInput struct {
	line    int // in badInputsDoc
	input   string
	command string // after "stormctl "
	printed string // the stderr line starting "stormctl: "
	exit    int
}

// The table sits between these lines of badInputsDoc.
const (
	tableStart = "<!-- bad-inputs: TestBadInputs runs every row; go test ./internal/cli -run TestBadInputs -update rewrites the printed lines -->"
	tableEnd   = "<!-- /bad-inputs -->"
)

// readBadInputs parses the table: | input | command | printed | exit |,
// the command and the printed line each in inline code.
func readBadInputs(t *testing.T) (rows []badInput, lines []string, start, end int) {
	t.Helper()
	b, err := os.ReadFile(badInputsDoc)
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(string(b), "\n")
	start, end = slices.Index(lines, tableStart), slices.Index(lines, tableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no bad-inputs table between %q and %q", badInputsDoc, tableStart, tableEnd)
	}
	for i := start + 1; i < end; i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|---") || strings.HasPrefix(l, "| input ") {
			continue
		}
		cells := splitRow(l)
		if len(cells) != 4 {
			t.Fatalf("%s:%d: want 4 cells (input, command, printed, exit), got %d: %s", badInputsDoc, i+1, len(cells), l)
		}
		exit, err := strconv.Atoi(cells[3])
		if err != nil {
			t.Fatalf("%s:%d: exit %q: %v", badInputsDoc, i+1, cells[3], err)
		}
		cmd, ok := strings.CutPrefix(code(cells[1]), "stormctl ")
		if !ok {
			t.Fatalf("%s:%d: the command %q does not start with stormctl", badInputsDoc, i+1, cells[1])
		}
		rows = append(rows, badInput{line: i + 1, input: cells[0], command: cmd, printed: code(cells[2]), exit: exit})
	}
	return rows, lines, start, end
}

// splitRow splits a markdown table row at its unescaped pipes.
func splitRow(l string) []string {
	var cells []string
	var cur strings.Builder
	l = strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|")
	for i := 0; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l) && l[i+1] == '|':
			cur.WriteByte('|')
			i++
		case l[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(l[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// code is the text of an inline code span (`x` or “ x “).
func code(s string) string {
	n := len(s) - len(strings.TrimLeft(s, "`"))
	if n == 0 || !strings.HasSuffix(s, strings.Repeat("`", n)) {
		return s
	}
	s = s[n : len(s)-n]
	if n > 1 {
		s = strings.TrimPrefix(strings.TrimSuffix(s, " "), " ")
	}
	return s
}

// inlineCode writes s as an inline code span.
func inlineCode(s string) string {
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// splitArgs splits a command line at spaces outside single quotes.
func splitArgs(s string) []string {
	var args []string
	var cur strings.Builder
	quoted, started := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, started = !quoted, true
		case r == ' ' && !quoted:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}

// placeholders are the names a command and its printed line may use; each
// is made afresh for every row (see the list above the table in docs/exit-codes.md).
var placeholders = map[string]func(t *testing.T) string{
	"OUT":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "out") },
	"EMPTY": func(t *testing.T) string { return emptyDir(t) },
	"FILE": func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "file")
		writeFile(t, p, []byte("x\n"))
		return p
	},
	"STORM":       func(t *testing.T) string { return storedStorm(t, nil) },
	"NOSTORMJSON": func(t *testing.T) string { return storedStorm(t, removing(stormdir.FileStorm)) },
	"NORUNS":      func(t *testing.T) string { return storedStorm(t, removing(stormdir.FileRuns)) },
	"CUTSTORMJSON": func(t *testing.T) string {
		return storedStorm(t, func(t *testing.T, dir string) { cutAfter(t, filepath.Join(dir, stormdir.FileStorm), 12) })
	},
	"BADTYPES": func(t *testing.T) string {
		return storedStorm(t, func(t *testing.T, dir string) { badTypes(t, filepath.Join(dir, stormdir.FileStorm)) })
	},
	"CUTRUNS": func(t *testing.T) string {
		return storedStorm(t, func(t *testing.T, dir string) { cutLastLine(t, filepath.Join(dir, stormdir.FileRuns)) })
	},
	"BADLINE": func(t *testing.T) string {
		return storedStorm(t, func(t *testing.T, dir string) {
			path := filepath.Join(dir, stormdir.FileRuns)
			b, _ := os.ReadFile(path)
			writeFile(t, path, []byte("not json\n"+string(b)))
		})
	},
	"RUNSDIR": func(t *testing.T) string {
		return storedStorm(t, func(t *testing.T, dir string) {
			removing(stormdir.FileRuns)(t, dir)
			if err := os.Mkdir(filepath.Join(dir, stormdir.FileRuns), 0o755); err != nil {
				t.Fatal(err)
			}
		})
	},
	"EVENTSFILE": func(t *testing.T) string {
		return storedStorm(t, func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, stormdir.DirEvents)); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, stormdir.DirEvents), []byte("x\n"))
		})
	},
	"PGSTORM": func(t *testing.T) string {
		return storedStorm(t, editStormJSON(func(m map[string]any) {
			// As if begun with --world postgres --pg-url postgres://u:secret@db/app.
			m["config"].(map[string]any)["worlds"] = []string{"postgres"}
			m["endpoints"] = []stormdir.Endpoint{{Flag: "pg-url", Value: "postgres://u:xxxxx@db/app", Secret: true}}
		}))
	},
	"NOHISTORY": func(t *testing.T) string {
		return storedStorm(t, func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, stormdir.FileHistory), nil) })
	},
	"DEVKITSTORM": func(t *testing.T) string {
		// As if begun with --engine devkit (on a devkit world).
		return storedStorm(t, editStormJSON(func(m map[string]any) { m["config"].(map[string]any)["engine"] = "devkit" }))
	},
	"PKGSTORM": func(t *testing.T) string {
		return storedStorm(t, editStormJSON(func(m map[string]any) {
			// As if begun with --world package:… --world-env WORKFLOW_REDIS_URI=redis://:secret@cache:6379.
			m["world_env"] = []stormdir.Setting{{Key: "WORKFLOW_REDIS_URI", Value: "redis://:xxxxx@cache:6379", Secret: true}}
		}))
	},
	"PGPKG": func(t *testing.T) string {
		// A local build named @workflow/world-postgres: opened as world-postgres is.
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "package.json"), []byte(`{"name":"@workflow/world-postgres","version":"0.0.0"}`))
		return dir
	},
	"DEVKITRUNTIME": func(t *testing.T) string {
		// As if begun with --engine devkit by a stormctl that did not keep
		// the package's own events (storm.json records the runtime).
		return storedStorm(t, editStormJSON(func(m map[string]any) {
			m["config"].(map[string]any)["engine"] = "devkit"
			m["runtimes"] = []stormdir.Runtime{{Cell: history.NewCellKey("local", "control", "main"), Engine: "devkit", Channel: "stable", Source: "published", Scheme: "ulid"}}
		}))
	},
	"NOTPG": func(t *testing.T) string { return nettest.Serve(t, nettest.HTTP400) },
	"RUN":   func(t *testing.T) string { return templateStorm(t).runs[0] },
	"RUN2":  func(t *testing.T) string { return templateStorm(t).runs[1] },
}

var placeholderRE = regexp.MustCompile(`\b(` + strings.Join(func() []string {
	var names []string
	for n := range placeholders {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	return names
}(), "|") + `)\b`)

// editStormJSON edits a stored storm's storm.json as a JSON object.
func editStormJSON(edit func(m map[string]any)) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		path := filepath.Join(dir, stormdir.FileStorm)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		if b, err = json.MarshalIndent(m, "", "  "); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, b)
	}
}

func removing(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// cutAfter keeps a file's first keep lines and half of the next, as a
// kill -9 mid-write would. A fixed cut keeps the line the error names the
// same when storm.json grows (a new knob adds lines to its conditions).
func cutAfter(t *testing.T, path string, keep int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if keep >= len(lines) {
		t.Fatalf("%s has %d lines, cannot cut after %d", path, len(lines), keep)
	}
	writeFile(t, path, []byte(strings.Join(lines[:keep], "")+lines[keep][:len(lines[keep])/2]))
}

// badTypes edits storm.json's config to "worlds": 42 and "runs": "lots":
// well-formed JSON with values of the wrong type, in place (the lines stay
// where the storm wrote them).
func badTypes(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := string(b)
	for _, e := range []struct{ re, to string }{{`"worlds": \[[^\]]*\]`, `"worlds": 42`}, {`"runs": [0-9]+`, `"runs": "lots"`}} {
		loc := regexp.MustCompile(e.re).FindStringIndex(edited)
		if loc == nil {
			t.Fatalf("%s has no %s to edit", path, e.re)
		}
		edited = edited[:loc[0]] + e.to + edited[loc[1]:]
	}
	writeFile(t, path, []byte(edited))
}

// elided reports whether a table row's printed line elides part of the
// message with "…" (a list that grows with every world, scenario or knob).
func elided(want string) bool { return strings.Contains(want, "…") }

// matchesElided reports whether got is want, each "…" in want standing
// for any text.
func matchesElided(got, want string) bool {
	parts := strings.Split(want, "…")
	if len(parts) == 1 {
		return got == want
	}
	if !strings.HasPrefix(got, parts[0]) || !strings.HasSuffix(got, parts[len(parts)-1]) ||
		len(got) < len(parts[0])+len(parts[len(parts)-1]) {
		return false
	}
	rest := got[len(parts[0]) : len(got)-len(parts[len(parts)-1])]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

// cutLastLine cuts runs.jsonl's last line in half (no newline after it).
func cutLastLine(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	i := bytes.LastIndexByte(b, '\n') + 1
	writeFile(t, path, b[:i+(len(b)-i)/2])
}

// template is the small real storm the storm placeholders are copied from.
type template struct {
	dir  string
	runs []string // its run ids, in runs.jsonl's order
	err  error
}

// templateDir is TestBadInputs's template storm, made on its first use.
var templateDir template

// templateStorm runs, once per TestBadInputs, a two-run control storm on
// the local world: every artifact a real storm writes. It is removed when
// the test ends.
func templateStorm(t *testing.T) template {
	t.Helper()
	if templateDir.dir != "" || templateDir.err != nil {
		if templateDir.err != nil {
			t.Fatal(templateDir.err)
		}
		return templateDir
	}
	dir, err := os.MkdirTemp("", "stormctl-test-template-")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "storm")
	code, _, stderr := run(t.Context(), "storm", "--world", "local", "--scenario", "control", "--condition", "main",
		"--runs", "2", "--time-scale", "0.1", "--out", out)
	runs, err := openStorm(t, out).Runs()
	switch {
	case code != 0:
		templateDir.err = fmt.Errorf("template storm: exit %d: %s", code, stderr)
	case err != nil || len(runs) != 2:
		templateDir.err = fmt.Errorf("template storm: %d runs, %v", len(runs), err)
	default:
		templateDir = template{dir: out, runs: []string{runs[0].RunID, runs[1].RunID}}
	}
	if templateDir.err != nil {
		os.RemoveAll(dir)
		t.Fatal(templateDir.err)
	}
	return templateDir
}

// storedStorm copies the template storm and damages the copy with edit.
func storedStorm(t *testing.T, edit func(*testing.T, string)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "storm")
	if err := os.CopyFS(dir, os.DirFS(templateStorm(t).dir)); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(t, dir)
	}
	return dir
}

// TestBadInputs runs every row of docs/exit-codes.md's bad-inputs table: the
// command exits with the row's code and prints the row's line on stderr,
// the only line starting "stormctl: " (for a bad storm flag, the only line
// at all). With -update it rewrites the printed lines and exit codes.
func TestBadInputs(t *testing.T) {
	rows, lines, start, end := readBadInputs(t)
	if len(rows) < 20 {
		t.Fatalf("the bad-inputs table has %d rows, want at least 20", len(rows))
	}
	// Made before any row moves TMPDIR into its own temp dir.
	templateStorm(t)
	t.Cleanup(func() {
		os.RemoveAll(filepath.Dir(templateDir.dir))
		templateDir = template{}
	})
	updated := slices.Clone(lines)
	for _, row := range rows {
		t.Run(row.input, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			vals := map[string]string{}
			subst := func(s string) string {
				return placeholderRE.ReplaceAllStringFunc(s, func(name string) string {
					if _, ok := vals[name]; !ok {
						vals[name] = placeholders[name](t)
					}
					return vals[name]
				})
			}
			var args []string
			for _, a := range splitArgs(row.command) {
				args = append(args, subst(a))
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			code, _, stderr := run(ctx, args...)
			var printed []string
			for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
				if strings.HasPrefix(l, "stormctl: ") {
					printed = append(printed, l)
				}
			}
			if len(printed) != 1 {
				t.Fatalf("%s:%d: stormctl %s: want one line starting \"stormctl: \" on stderr, got:\n%s", badInputsDoc, row.line, row.command, stderr)
			}
			if *update && !elided(row.printed) {
				got := printed[0]
				for _, name := range []string{"RUN", "RUN2"} {
					subst(name) // run ids appear in lines about files named after them
				}
				names := make([]string, 0, len(vals))
				for n := range vals {
					names = append(names, n)
				}
				slices.SortFunc(names, func(a, b string) int { return len(vals[b]) - len(vals[a]) })
				for _, n := range names {
					got = strings.ReplaceAll(got, vals[n], n)
				}
				updated[row.line-1] = fmt.Sprintf("| %s | %s | %s | %d |", row.input, inlineCode("stormctl "+row.command),
					strings.ReplaceAll(inlineCode(got), "|", `\|`), code)
				return
			}
			if *update && matchesElided(printed[0], subst(row.printed)) {
				return // an elided row is kept as written while it still matches
			}
			if want := subst(row.printed); !matchesElided(printed[0], want) {
				t.Errorf("%s:%d: stormctl %s printed\n  %s\nwant\n  %s", badInputsDoc, row.line, row.command, printed[0], want)
			}
			if code != row.exit {
				t.Errorf("%s:%d: stormctl %s: exit %d, want %d", badInputsDoc, row.line, row.command, code, row.exit)
			}
			if args[0] == "storm" && code == cli.ExitUsage && strings.Count(stderr, "\n") != 1 {
				t.Errorf("a bad storm input printed more than its one line:\n%s", stderr)
			}
		})
	}
	if *update {
		if err := os.WriteFile(badInputsDoc, []byte(strings.Join(updated, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the %d rows between lines %d and %d of %s", len(rows), start+1, end+1, badInputsDoc)
	}
}

func TestMatchesElided(t *testing.T) {
	tests := []struct {
		got, want string
		match     bool
	}{
		{`unknown world "x" (valid: a, b)`, `unknown world "x" (valid: …)`, true},
		{`unknown world "y" (valid: a, b)`, `unknown world "x" (valid: …)`, false},
		{`unknown world "x" (valid: a, b`, `unknown world "x" (valid: …)`, false},
		{`a 1 b 2 c`, `a … b … c`, true},
		{`a 1 c 2 b`, `a … b … c`, false},
		{`ab`, `ab…b`, false},
		{`same`, `same`, true},
		{`same`, `other`, false},
	}
	for _, tt := range tests {
		if got := matchesElided(tt.got, tt.want); got != tt.match {
			t.Errorf("matchesElided(%q, %q) = %v, want %v", tt.got, tt.want, got, tt.match)
		}
	}
}
