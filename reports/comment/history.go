package comment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/stormctl/stormctl/reports"
)

// The history rides in the comment it is shown in, as a hidden HTML
// comment: the marker line, one JSON row a line, the end line. JSON never
// holds "-->" (encoding/json writes '>' as \u003e), so a row cannot end the
// HTML comment early.
const (
	historyStart = "<!-- stormctl-comment history v1"
	historyEnd   = "-->"
)

// Bounds on a previous comment, which is untrusted input (anyone who can
// edit it, or post one that looks like it, chose its text).
const (
	// MaxPrevious is the most bytes of a previous comment read: GitHub
	// keeps at most 65,536 characters of a comment, 4 bytes each at most.
	MaxPrevious = 4 * 65536
	// MaxRows is the most rows a history may hold; DefaultKeep the rows a
	// comment keeps unless told otherwise.
	MaxRows     = 100
	DefaultKeep = 10
	// maxCells bounds the cells of one row.
	maxCells = 1000
	// maxRuns bounds a cell's runs (storm --runs takes at most 1,000,000).
	maxRuns = 1000000
)

// Gate verdicts a row records. **contract** (the history's JSON)
const (
	GatePassed = "passed"
	GateFailed = "failed"
	// GateNone: no gate result was given to the comment.
	GateNone = ""
)

// Row is one storm of a pull request's history. **contract** (one line of
// the hidden history)
type Row struct {
	// Commit is the commit stormed (hex, 7 to 40 digits), "" when not
	// given.
	Commit string `json:"commit"`
	// Gate is GatePassed, GateFailed or GateNone.
	Gate string `json:"gate"`
	// Artifact is the URL of the storm's uploaded directory, "" when not
	// given.
	Artifact string `json:"artifact,omitempty"`
	// Cells are the storm's cells in its order, each with its
	// corrupted+silent runs of the runs that measured something.
	Cells []CellRate `json:"cells"`
}

// CellRate is one cell's corrupted+silent rate in a Row: Bad of N runs
// (the cell's runs less infra, compare's denominator).
type CellRate struct {
	Cell string `json:"cell"`
	Bad  int    `json:"bad"`
	N    int    `json:"n"`
}

// NewRow is the history row of a storm: its commit, gate verdict, artifact
// and every cell's corrupted+silent runs of its measured runs.
func NewRow(commit, gate, artifact string, s *reports.Summary) Row {
	r := Row{Commit: commit, Gate: gate, Artifact: artifact}
	for _, c := range s.Cells {
		r.Cells = append(r.Cells, CellRate{Cell: c.Key().String(), Bad: c.Corrupted + c.Silent, N: reports.Measured(c)})
	}
	return r
}

var (
	commitRE = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
	// urlRE admits the URLs a row links: https, no query, no character
	// markdown or HTML would read as syntax.
	urlRE = regexp.MustCompile(`^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%/+=-]*)?$`)
	// cellRE admits the names a cell key is made of (world, scenario and
	// condition, with a condition's overrides) and nothing markdown reads.
	cellRE = regexp.MustCompile(`^[A-Za-z0-9._+=/:,-]{1,300}$`)
)

// CheckCommit checks a commit given for a row: "" or 7 to 40 lower-case
// hex digits.
func CheckCommit(s string) error {
	if s != "" && !commitRE.MatchString(s) {
		return fmt.Errorf("%q: want 7 to 40 lower-case hex digits", s)
	}
	return nil
}

// CheckURL checks a URL given for a row: "" or an https URL without a
// query or characters markdown reads.
func CheckURL(s string) error {
	if s != "" && !urlRE.MatchString(s) {
		return fmt.Errorf("%q: want an https://host/path URL without a query, quotes, spaces or brackets", s)
	}
	return nil
}

// Validate checks a row as a previous comment holds it: everything it says
// is shown again, in markdown.
func (r Row) Validate() error {
	if err := CheckCommit(r.Commit); err != nil {
		return fmt.Errorf("commit %w", err)
	}
	if r.Gate != GatePassed && r.Gate != GateFailed && r.Gate != GateNone {
		return fmt.Errorf("gate %q: want %q, %q or none", r.Gate, GatePassed, GateFailed)
	}
	if err := CheckURL(r.Artifact); err != nil {
		return fmt.Errorf("artifact %w", err)
	}
	if len(r.Cells) > maxCells {
		return fmt.Errorf("%d cells (at most %d)", len(r.Cells), maxCells)
	}
	seen := make(map[string]bool, len(r.Cells))
	for _, c := range r.Cells {
		switch {
		case !cellRE.MatchString(c.Cell):
			return fmt.Errorf("cell %q: not a cell name", c.Cell)
		case seen[c.Cell]:
			return fmt.Errorf("cell %q is listed twice", c.Cell)
		case c.N < 0 || c.N > maxRuns || c.Bad < 0 || c.Bad > c.N:
			return fmt.Errorf("cell %s: %d bad of %d runs: want 0 <= bad <= runs <= %d", c.Cell, c.Bad, c.N, maxRuns)
		}
		seen[c.Cell] = true
	}
	return nil
}

// History is a pull request's storms, oldest first.
type History []Row

// ParseHistory reads the history out of a previous comment's body: the
// last hidden history block in it. A body without one is an empty
// history. A body that is too long, or whose block is cut off, holds a
// line that is not a row, or a row that does not validate, is an error:
// the caller starts a fresh history (and says so) rather than show what it
// cannot vouch for.
func ParseHistory(body []byte) (History, error) {
	if len(body) > MaxPrevious {
		return nil, fmt.Errorf("%d bytes: more than a comment holds (%d)", len(body), MaxPrevious)
	}
	body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	at := bytes.LastIndex(body, []byte(historyStart+"\n"))
	if at < 0 {
		if bytes.Contains(body, []byte(historyStart)) {
			return nil, errors.New("the history block's first line is not its marker alone")
		}
		return nil, nil
	}
	block := body[at+len(historyStart)+1:]
	var rows []byte
	if !bytes.HasPrefix(block, []byte(historyEnd)) {
		end := bytes.Index(block, []byte("\n"+historyEnd))
		if end < 0 {
			return nil, errors.New("the history block is cut off (no closing -->)")
		}
		rows = block[:end]
	}
	var h History
	for i, line := range strings.Split(string(rows), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if len(h) == MaxRows {
			return nil, fmt.Errorf("more than %d rows", MaxRows)
		}
		var r Row
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("history line %d: not a row: %v", i+1, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("history line %d: more than one value", i+1)
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("history line %d: %w", i+1, err)
		}
		h = append(h, r)
	}
	return h, nil
}

// Append returns the history with r last, keeping the last keep rows.
func (h History) Append(r Row, keep int) History {
	out := append(h[:len(h):len(h)], r)
	if len(out) > keep {
		out = out[len(out)-keep:]
	}
	return out
}

// block writes the history as the hidden block a later comment parses.
func (h History) block() (string, error) {
	var b strings.Builder
	b.WriteString(historyStart + "\n")
	for _, r := range h {
		line, err := json.Marshal(r)
		if err != nil {
			return "", fmt.Errorf("the history row of %s: %w", r.Commit, err)
		}
		b.Write(line)
		b.WriteString("\n")
	}
	b.WriteString(historyEnd + "\n")
	return b.String(), nil
}
