package comment_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/comment"
)

// twoCells is a storm of two cells: 3 corrupted and 1 silent of 24 runs
// (2 of them infra), and a clean one.
func twoCells() *reports.Summary {
	return &reports.Summary{Cells: []*reports.Cell{
		{CellKey: history.CellKey{World: "local", Scenario: "step-storm", Condition: "main"}, Runs: 24, Corrupted: 3, Silent: 1, Infra: 2, Completed: 18},
		{CellKey: history.CellKey{World: "local", Scenario: "control", Condition: "main/engine=devkit"}, Runs: 24, Completed: 24},
	}}
}

// body renders a comment on twoCells with history h.
func body(t testing.TB, h comment.History, commit string) []byte {
	t.Helper()
	var b bytes.Buffer
	c := comment.Comment{Summary: twoCells(), Commit: commit, ArtifactURL: "https://github.com/o/r/actions/runs/1/artifacts/2", History: h, Keep: 3}
	if err := c.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestHistoryCarriedOn: each comment's body carries the history on to the
// next, which keeps the last Keep rows, this storm's last.
func TestHistoryCarriedOn(t *testing.T) {
	var h comment.History
	for i, commit := range []string{"aaaaaaa", "bbbbbbb", "ccccccc", "ddddddd"} {
		got, err := comment.ParseHistory(body(t, h, commit))
		if err != nil {
			t.Fatalf("storm %d: %v", i+1, err)
		}
		if want := min(i+1, 3); len(got) != want {
			t.Fatalf("storm %d: %d rows, want %d", i+1, len(got), want)
		}
		last := got[len(got)-1]
		if last.Commit != commit || len(last.Cells) != 2 || last.Cells[0] != (comment.CellRate{Cell: "local/step-storm/main", Bad: 4, N: 22}) {
			t.Fatalf("storm %d: last row %+v", i+1, last)
		}
		h = got
	}
	if h[0].Commit != "bbbbbbb" {
		t.Errorf("the oldest kept row is %s, want bbbbbbb", h[0].Commit)
	}
}

// TestRowsOfEveryCondition: a storm's own row validates (or the next
// comment would drop the history it carries) for every preset, with
// overrides, on every kind of world name.
func TestRowsOfEveryCondition(t *testing.T) {
	s := &reports.Summary{}
	for _, p := range conditions.Presets() {
		for _, cond := range []string{p.Name, p.Name + "/engine=devkit", p.Name + "/seal-after=1.5s/wake=racy"} {
			s.Cells = append(s.Cells, &reports.Cell{CellKey: history.CellKey{World: "devkit-postgres", Scenario: "blocked-branch", Condition: cond}, Runs: 3, Corrupted: 1, Infra: 1})
		}
	}
	r := comment.NewRow("0123456789abcdef0123456789abcdef01234567", comment.GateFailed, "https://github.com/o/r/actions/runs/1/artifacts/2", s)
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

// row is a valid history line; the cases below break one thing each.
const row = `{"commit":"abc1234","gate":"passed","artifact":"https://github.com/o/r/actions/runs/1/artifacts/2","cells":[{"cell":"local/step-storm/main","bad":1,"n":24}]}`

func block(lines ...string) string {
	return "text before\n<!-- stormctl-comment history v1\n" + strings.Join(lines, "\n") + "\n-->\ntext after\n"
}

func TestParseHistory(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		rows       int
		err        string // a piece of the error; "" for none
	}{
		{name: "no body", body: "", rows: 0},
		{name: "no block", body: "a comment of someone else's\n", rows: 0},
		{name: "one row", body: block(row), rows: 1},
		{name: "empty block", body: "<!-- stormctl-comment history v1\n-->\n", rows: 0},
		{name: "blank lines", body: block("", row, "  ", row), rows: 2},
		{name: "crlf", body: strings.ReplaceAll(block(row, row), "\n", "\r\n"), rows: 2},
		{name: "the last block counts", body: block(row) + block(row, row, row), rows: 3},
		{name: "marker not alone", body: "<!-- stormctl-comment history v1 -->", err: "not its marker alone"},
		{name: "cut off", body: "<!-- stormctl-comment history v1\n" + row + "\n", err: "cut off"},
		{name: "not json", body: block("{not json"), err: "history line 1: not a row"},
		{name: "two values", body: block(row + row), err: "more than one value"},
		{name: "unknown field", body: block(`{"commit":"abc1234","gate":"","cells":[],"extra":1}`), err: "unknown field"},
		{name: "upper-case commit", body: block(`{"commit":"ABC1234","gate":"","cells":[]}`), err: "hex digits"},
		{name: "short commit", body: block(`{"commit":"abc","gate":"","cells":[]}`), err: "hex digits"},
		{name: "unknown gate", body: block(`{"commit":"","gate":"maybe","cells":[]}`), err: `gate "maybe"`},
		{name: "http url", body: block(`{"commit":"","gate":"","artifact":"http://x.io/a","cells":[]}`), err: "artifact \"http"},
		{name: "url with a bracket", body: block(`{"commit":"","gate":"","artifact":"https://x.io/a)b","cells":[]}`), err: "artifact \"http"},
		{name: "cell with markdown", body: block(`{"commit":"","gate":"","cells":[{"cell":"a|b","bad":0,"n":1}]}`), err: "not a cell name"},
		{name: "cell twice", body: block(`{"commit":"","gate":"","cells":[{"cell":"a","bad":0,"n":1},{"cell":"a","bad":0,"n":1}]}`), err: "listed twice"},
		{name: "more bad than runs", body: block(`{"commit":"","gate":"","cells":[{"cell":"a","bad":2,"n":1}]}`), err: "want 0 <= bad <= runs"},
		{name: "negative runs", body: block(`{"commit":"","gate":"","cells":[{"cell":"a","bad":0,"n":-1}]}`), err: "want 0 <= bad <= runs"},
		{name: "too many rows", body: block(strings.Repeat(row+"\n", comment.MaxRows+1)), err: "more than 100 rows"},
		{name: "too long", body: strings.Repeat("x", comment.MaxPrevious+1), err: "more than a comment holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := comment.ParseHistory([]byte(tc.body))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v, want %d rows", err, tc.rows)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			case tc.err != "" && h != nil:
				t.Fatalf("a history of %d rows with the error, want none", len(h))
			case len(h) != tc.rows:
				t.Fatalf("%d rows, want %d", len(h), tc.rows)
			}
		})
	}
}

// TestBodyFitsAComment: a storm of many cells is cut to MaxBody at a line,
// saying so, and its history block stays whole.
func TestBodyFitsAComment(t *testing.T) {
	s := &reports.Summary{}
	for i := range 400 {
		s.Cells = append(s.Cells, &reports.Cell{CellKey: history.CellKey{World: "local", Scenario: "step-storm", Condition: "main/seed=" + strings.Repeat("9", i%7+1) + string(rune('a'+i%26)) + strings.Repeat("x", i/26)}, Runs: 24, Corrupted: 24})
	}
	var b bytes.Buffer
	if err := (comment.Comment{Summary: s, Commit: "abcdef0", Keep: 2}).Markdown(&b); err != nil {
		t.Fatal(err)
	}
	if b.Len() > comment.MaxBody {
		t.Fatalf("%d bytes, more than MaxBody %d", b.Len(), comment.MaxBody)
	}
	if !strings.Contains(b.String(), "cut to fit a comment") {
		t.Errorf("the cut body does not say it was cut")
	}
	h, err := comment.ParseHistory(b.Bytes())
	if err != nil || len(h) != 1 || len(h[0].Cells) != 400 {
		t.Fatalf("the history of the cut body: %d rows, %v", len(h), err)
	}
}

// FuzzParseHistory: any previous body, however made, gives a history or an
// error, never a panic; a history's rows validate, render, and read back
// the same.
func FuzzParseHistory(f *testing.F) {
	f.Add([]byte(block(row)))
	f.Add([]byte(block(row, "", row)))
	f.Add([]byte("<!-- stormctl-comment history v1\n-->"))
	f.Add(body(f, nil, "abc1234"))
	if prev, err := os.ReadFile(filetest.Repo("internal", "cli", "testdata", "comment", "previous.md")); err == nil {
		f.Add(prev)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := comment.ParseHistory(b)
		if err != nil {
			if h != nil {
				t.Fatalf("a history of %d rows with error %v", len(h), err)
			}
			return
		}
		for i, r := range h {
			if err := r.Validate(); err != nil {
				t.Fatalf("row %d does not validate: %v", i+1, err)
			}
		}
		// The rows carried on into a comment read back as they were (and
		// this storm's row after them).
		next, err := comment.ParseHistory(body(t, h, "abcdef0"))
		if err != nil {
			t.Fatalf("the next comment's history: %v", err)
		}
		kept := h.Append(comment.Row{}, 3)
		if len(next) != len(kept) {
			t.Fatalf("%d rows carried on, want %d", len(next), len(kept))
		}
		for i := range len(kept) - 1 {
			if next[i].Commit != kept[i].Commit || next[i].Gate != kept[i].Gate || len(next[i].Cells) != len(kept[i].Cells) {
				t.Fatalf("row %d read back as %+v, was %+v", i+1, next[i], kept[i])
			}
		}
	})
}
