package reports

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// RunRecord is one line of runs.jsonl. **contract**
type RunRecord struct {
	// CellKey is the run's cell: its world, scenario and condition.
	history.CellKey
	Index   int              `json:"index"`
	RunID   string           `json:"run_id"`
	Outcome history.Outcome  `json:"outcome"`
	Detail  string           `json:"detail,omitempty"`
	Started time.Time        `json:"started"`
	Ended   time.Time        `json:"ended"`
	Millis  int64            `json:"duration_ms"`
	Events  int              `json:"events"`
	Stats   history.RunStats `json:"stats"`
	// CommitSource says whose commit times the findings used: "store"
	// (the database's own, e.g. pg_xact_commit_timestamp) or "world" (what
	// the writers observed).
	CommitSource string `json:"commit_source,omitempty"`
	// Guard is how the world's legacy guard fared, when the run had one.
	Guard    *history.GuardCounts  `json:"guard,omitempty"`
	Findings forensics.RunFindings `json:"findings"`
	// Verdicts judge every fenced or guard rejection of the run; Judged
	// says they were computed (a run without rejections has none).
	Verdicts []verdict.Judgement `json:"verdicts,omitempty"`
	Judged   bool                `json:"judged,omitempty"`
	// Class is the run's root-cause class (explain.Classify) when its
	// outcome gets one (corrupted, silent, gap, hole, stuck); Timeline is
	// the path of its timeline under the storm directory, when one was
	// written.
	Class    string `json:"class,omitempty"`
	Timeline string `json:"timeline,omitempty"`
	// SpecVersion is the World contract version the run was created under,
	// as the runtime stamped its run_created (the package's specVersion);
	// absent where no runtime stamps one (the model's worlds).
	SpecVersion *int `json:"spec_version,omitempty"`
	// Faults labels (kind#id, storm.json's faults) the nemesis faults on
	// this run's world whose span overlapped the run's lifetime.
	Faults []string `json:"faults,omitempty"`
}

// Cell is one row of the summary: a (world, scenario, condition) and what
// its runs came to. **contract** (summary.json)
type Cell struct {
	// CellKey is the cell's world, scenario and condition.
	history.CellKey
	Runs      int `json:"runs"`
	Completed int `json:"completed"`
	Corrupted int `json:"corrupted"`
	Silent    int `json:"silent"`
	Gap       int `json:"gap"`
	Hole      int `json:"hole"`
	Stuck     int `json:"stuck"`
	Failed    int `json:"failed"`
	Infra     int `json:"infra"`
	// Rejections counts fenced (and guard) rejections; TruePositives is
	// how many of them a verdict confirmed, null until verdicts are computed.
	Rejections    int  `json:"rejections"`
	TruePositives *int `json:"true_positives"`
	// Benign and UnknownVerdicts complete the verdict split of Rejections.
	Benign          int `json:"benign"`
	UnknownVerdicts int `json:"unknown_verdicts"`
	// RunFindings sums the checkers' findings over the cell's runs, their
	// fields inline (reads, inversions, ..., slot: the slot scheme's
	// findings, only for slot conditions). summary.json leaves out
	// unpositioned (see MarshalJSON).
	forensics.RunFindings
	// Beyond the contract: what the engine did.
	Divergences int `json:"divergences"`
	Recoveries  int `json:"recoveries"`
	Invocations int `json:"invocations"`
	// Recovered counts divergences a recovery replay cleared (invisible
	// in the outcome).
	Recovered int `json:"recovered_divergences"`
	// Classes counts the cell's runs per root-cause class; Timelines lists
	// the timelines of the first MaxTimelines runs of each class (paths
	// under the storm directory).
	Classes   map[string]int      `json:"classes,omitempty"`
	Timelines map[string][]string `json:"timelines,omitempty"`
	// Guard sums the legacy guard's counts over the cell's runs (only when
	// the cell's condition has a guard).
	Guard *history.GuardCounts `json:"guard,omitempty"`
	// Windows are the cell's mint-to-commit windows per event type and
	// Pairs its commit-order inversions per (overtaking, overtaken) type
	// pair, most first, at most MaxCellPairs: filled in when the storm ends
	// (stormctl forensics DIR prints them for any storm directory, merged
	// ones included).
	Windows map[eventlog.Type]forensics.Window `json:"windows,omitempty"`
	Pairs   []forensics.PairCount              `json:"pairs,omitempty"`
	// FillP50/P99/Max summarize the slot findings' hole-fill latencies in
	// milliseconds.
	FillP50 float64 `json:"hole_fill_p50_ms,omitempty"`
	FillP99 float64 `json:"hole_fill_p99_ms,omitempty"`
	FillMax float64 `json:"hole_fill_max_ms,omitempty"`
	// Faulted counts the runs a nemesis fault overlapped, per outcome
	// (storm --nemesis; absent without one).
	Faulted map[history.Outcome]int `json:"faulted,omitempty"`
	// Harness is the harness's health over the cell's runs, for an engine
	// that reports it (the devkit engine); absent otherwise.
	Harness *CellHarness `json:"harness,omitempty"`
	// SpecVersions counts the cell's runs per the World contract version
	// they were created under (RunRecord.SpecVersion), so that runs of two
	// contracts are never compared unawares; absent where none is stamped.
	SpecVersions map[int]int `json:"spec_versions,omitempty"`
}

// MaxCellPairs bounds the type pairs a summary cell lists.
const MaxCellPairs = 10

// MaxTimelines bounds the timelines a cell links per class.
const MaxTimelines = 3

// Key returns the cell's key.
func (c *Cell) Key() history.CellKey { return c.CellKey }

// Rejudge replaces a counted run's judgements old with now in the cell's
// rejections and their verdict split: the published runtime's refused
// writes, judged once the storm's runs have ended, and those refused
// after the run was counted (now holds more).
func (c *Cell) Rejudge(old, now []verdict.Judgement) {
	c.Rejections += len(now) - len(old)
	tp0, b0, u0 := verdict.Split(old)
	tp, b, u := verdict.Split(now)
	if c.TruePositives == nil {
		c.TruePositives = new(int)
	}
	*c.TruePositives += tp - tp0
	c.Benign += b - b0
	c.UnknownVerdicts += u - u0
}

// Add counts one run into the cell.
func (c *Cell) Add(r RunRecord) {
	c.Runs++
	switch r.Outcome {
	case history.Completed:
		c.Completed++
	case history.Corrupted:
		c.Corrupted++
	case history.Silent:
		c.Silent++
	case history.Gap:
		c.Gap++
	case history.Hole:
		c.Hole++
	case history.Stuck:
		c.Stuck++
	case history.Failed:
		c.Failed++
	case history.Infra:
		c.Infra++
	}
	c.Rejections += int(r.Stats.Rejections)
	if r.Judged {
		tp, benign, unknown := verdict.Split(r.Verdicts)
		if c.TruePositives == nil {
			c.TruePositives = new(int)
		}
		*c.TruePositives += tp
		c.Benign += benign
		c.UnknownVerdicts += unknown
	}
	c.Divergences += int(r.Stats.Divergences)
	c.Recoveries += int(r.Stats.Recoveries)
	c.Recovered += int(r.Stats.Recovered)
	c.AddClass(r.Class, r.Timeline)
	if v := r.SpecVersion; v != nil {
		if c.SpecVersions == nil {
			c.SpecVersions = map[int]int{}
		}
		c.SpecVersions[*v]++
	}
	c.Invocations += int(r.Stats.Invocations)
	if len(r.Faults) > 0 {
		if c.Faulted == nil {
			c.Faulted = map[history.Outcome]int{}
		}
		c.Faulted[r.Outcome]++
	}
	if r.Guard != nil {
		if c.Guard == nil {
			c.Guard = &history.GuardCounts{}
		}
		c.Guard.Add(*r.Guard)
	}
	if r.Stats.Harness != nil {
		if c.Harness == nil {
			c.Harness = &CellHarness{}
		}
		c.Harness.add(r)
	}
	c.RunFindings.Add(r.Findings)
	if r.Findings.Slot != nil {
		c.FillP50, c.FillP99, c.FillMax = c.Slot.Fill()
	}
}

// MarshalJSON writes the cell as summary.json has it: RunFindings' fields
// inline but unpositioned, which the cells never listed (runs.jsonl's
// findings and stormctl forensics DIR do).
func (c Cell) MarshalJSON() ([]byte, error) {
	type plain Cell // Cell without this method
	return json.Marshal(struct {
		plain
		// Unpositioned, always nil, hides RunFindings.Unpositioned: the
		// shallower of two fields of one JSON name wins.
		Unpositioned *int `json:"unpositioned,omitempty"`
	}{plain: plain(c)})
}

// AddClass counts a run of root-cause class (none when "") and links its
// timeline (when not "") while the class has fewer than MaxTimelines.
func (c *Cell) AddClass(class, timeline string) {
	if class == "" {
		return
	}
	if c.Classes == nil {
		c.Classes = map[string]int{}
	}
	c.Classes[class]++
	if timeline != "" && len(c.Timelines[class]) < MaxTimelines {
		if c.Timelines == nil {
			c.Timelines = map[string][]string{}
		}
		c.Timelines[class] = append(c.Timelines[class], timeline)
	}
}

// Count returns the number of runs with outcome o.
func (c *Cell) Count(o history.Outcome) int {
	switch o {
	case history.Completed:
		return c.Completed
	case history.Silent:
		return c.Silent
	case history.Corrupted:
		return c.Corrupted
	case history.Gap:
		return c.Gap
	case history.Hole:
		return c.Hole
	case history.Stuck:
		return c.Stuck
	case history.Failed:
		return c.Failed
	case history.Infra:
		return c.Infra
	}
	return 0
}

// Compact is the seed-style line: "23 corrupted / 1 completed", naming every
// outcome that occurred, worst first.
func (c *Cell) Compact() string {
	order := []history.Outcome{history.Corrupted, history.Silent, history.Gap, history.Hole, history.Failed, history.Stuck, history.Infra, history.Completed}
	s := ""
	for _, o := range order {
		n := c.Count(o)
		if n == 0 && o != history.Completed && o != history.Corrupted {
			continue
		}
		if s != "" {
			s += " / "
		}
		s += fmt.Sprintf("%d %s", n, o)
	}
	return s
}

// Summary is summary.json. **contract**
type Summary struct {
	Schema      int       `json:"schema"`
	Started     time.Time `json:"started"`
	Ended       time.Time `json:"ended"`
	Interrupted bool      `json:"interrupted,omitempty"`
	Cells       []*Cell   `json:"cells"`
}

// SchemaVersion is the version of the artifact formats this build writes
// (every file of a storm directory: storm.json and summary.json carry it).
// Version 2 spells every key in snake_case; version 1 spelt those of
// storm.json, runs.jsonl and history.jsonl in camelCase, and is still read
// (package stormdir).
const SchemaVersion = 2

// NewSummary returns an empty summary with one cell per key.
func NewSummary(keys []history.CellKey) *Summary {
	s := &Summary{Schema: SchemaVersion, Started: time.Now().UTC()}
	for _, k := range keys {
		s.Cells = append(s.Cells, &Cell{CellKey: k})
	}
	return s
}

// Worlds lists the distinct worlds of the summary's cells, in the order
// first met.
func (s *Summary) Worlds() []string { return s.distinct(func(c *Cell) string { return c.World }) }

// Conditions lists the distinct conditions of the summary's cells, in the
// order first met.
func (s *Summary) Conditions() []string {
	return s.distinct(func(c *Cell) string { return c.Condition })
}

// distinct lists the distinct values of field over the summary's cells, in
// the order first met (nil when there are no cells).
func (s *Summary) distinct(field func(*Cell) string) []string {
	var out []string
	for _, c := range s.Cells {
		if v := field(c); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Cell returns the cell for k, or nil.
func (s *Summary) Cell(k history.CellKey) *Cell {
	for _, c := range s.Cells {
		if c.Key() == k {
			return c
		}
	}
	return nil
}
