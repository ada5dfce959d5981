package gate

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/compare"
)

// KeyCorruptedSilent is the --max key counting corrupted and silent runs
// together.
const KeyCorruptedSilent = "corrupted+silent"

// ControlScenario is the scenario that must stay clean under every
// condition: a dirty control means the harness, not the condition, is broken.
const ControlScenario = "control"

// LegacyPrefix starts the condition names of legacy cells (main and its
// overrides), which calibrate a storm.
const LegacyPrefix = "main"

// ClassPrefix starts a --max key that counts the runs of a root-cause
// class: class:stale-prefix.
const ClassPrefix = "class:"

// MaxRule is one --max KEY=N: at most N runs of KEY (an outcome name,
// corrupted+silent, or class:NAME for a root-cause class) per cell.
type MaxRule struct {
	Key string
	Max int
}

// ParseMaxRule parses KEY=N.
func ParseMaxRule(s string) (MaxRule, error) {
	k, v, ok := strings.Cut(strings.TrimSpace(s), "=")
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if !ok || err != nil || n < 0 {
		return MaxRule{}, fmt.Errorf("--max %q: want KEY=N with N >= 0 and KEY one of %s", s, strings.Join(MaxKeys(), ", "))
	}
	r := MaxRule{Key: strings.TrimSpace(k), Max: n}
	if !slices.Contains(MaxKeys(), r.Key) {
		return MaxRule{}, fmt.Errorf("--max %q: unknown key %q (valid: %s)", s, r.Key, strings.Join(MaxKeys(), ", "))
	}
	return r, nil
}

// MaxKeys lists every key --max takes: the outcomes, corrupted+silent and
// class:NAME for every root-cause class, in the order help lists them.
func MaxKeys() []string {
	var keys []string
	for _, o := range history.Outcomes() {
		keys = append(keys, string(o))
	}
	keys = append(keys, KeyCorruptedSilent)
	for _, k := range explain.Classes() {
		keys = append(keys, ClassPrefix+k)
	}
	return keys
}

func (r MaxRule) String() string { return fmt.Sprintf("%s=%d", r.Key, r.Max) }

// MarshalText writes KEY=N.
func (r MaxRule) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads KEY=N.
func (r *MaxRule) UnmarshalText(b []byte) error {
	v, err := ParseMaxRule(string(b))
	*r = v
	return err
}

// count is the number of c's runs the rule counts.
func (r MaxRule) count(c *reports.Cell) int {
	if r.Key == KeyCorruptedSilent {
		return c.Corrupted + c.Silent
	}
	if k, ok := strings.CutPrefix(r.Key, ClassPrefix); ok {
		return c.Classes[k]
	}
	return c.Count(history.Outcome(r.Key))
}

// Config is gate's rules: a plain config built from flags, defaulted and
// validated before any storm is read.
type Config struct {
	// Max are the --max rules, in flag order.
	Max []MaxRule `json:"max,omitempty"`
	// Conditions are globs (* any text, ? one character) on condition names;
	// when set, every rule but --control-clean and calibration applies only
	// to the cells whose condition matches one.
	Conditions []string `json:"conditions,omitempty"`
	// ControlClean: every control cell, under any condition, has 0
	// corrupted, 0 silent and 0 gap runs.
	ControlClean bool `json:"control_clean,omitempty"`
	// RequireRejections: every narrowed cell (the control aside) rejected
	// at least one write.
	RequireRejections bool `json:"require_rejections,omitempty"`
	// RequireTruePositives: every narrowed cell (the control aside) has a
	// true positive among its rejections; verdicts not computed fail it.
	RequireTruePositives bool `json:"require_true_positives,omitempty"`
	// MaxInfraRate bounds infra runs / runs per narrowed cell.
	MaxInfraRate *float64 `json:"max_infra_rate,omitempty"`
	// NoWorse: no narrowed cell is worse than the baseline (Compare).
	NoWorse bool `json:"no_worse,omitempty"`
	// MinDecided is the share of its runs every gated cell (narrowed, and
	// the control cells under --control-clean) must have decided
	// (reports.Cell.Evidenced): a cell of stuck, failed or infra runs is
	// no evidence, whatever the other rules say. Always checked, like
	// calibration; nil: reports.DefaultMinDecided.
	MinDecided *float64 `json:"min_decided,omitempty"`
	// OnlyWhole checks that the storm is whole and nothing else: every
	// planned run recorded, every shard merged whole (no rules, no
	// evidence or calibration check). It picks a baseline: the action
	// skips a base branch's partial storm for an older whole one.
	OnlyWhole bool `json:"only_whole,omitempty"`
}

// Default is the rules gate applies when none are given: the target
// (seq*) cells have no corrupted, silent, gap or stuck run (a stuck run is
// no evidence a cell is clean), and the control is clean.
func Default() Config {
	return Config{
		Conditions:   []string{"seq*"},
		Max:          []MaxRule{{string(history.Corrupted), 0}, {string(history.Silent), 0}, {string(history.Gap), 0}, {string(history.Stuck), 0}},
		ControlClean: true,
	}
}

// Rules is the number of rules given (calibration and the evidence rule,
// always checked, aside).
func (c Config) Rules() int {
	n := len(c.Max)
	for _, b := range []bool{c.ControlClean, c.RequireRejections, c.RequireTruePositives, c.MaxInfraRate != nil, c.NoWorse, c.OnlyWhole} {
		if b {
			n++
		}
	}
	return n
}

// Defaults returns c with Default's rules when c has none (its
// --conditions, when given, are kept), and MinDecided set.
func (c Config) Defaults() Config {
	if c.MinDecided == nil {
		r := reports.DefaultMinDecided
		c.MinDecided = &r
	}
	if c.Rules() > 0 {
		return c
	}
	d := Default()
	d.MinDecided = c.MinDecided
	if len(c.Conditions) > 0 {
		d.Conditions = c.Conditions
	}
	return d
}

// minDecided is the evidence rule's share (reports.DefaultMinDecided when
// unset).
func (c Config) minDecided() float64 {
	if c.MinDecided == nil {
		return reports.DefaultMinDecided
	}
	return *c.MinDecided
}

// Validate checks every rule; messages name the flag.
func (c Config) Validate() error {
	if c.OnlyWhole && (c.Rules() > 1 || len(c.Conditions) > 0) {
		return fmt.Errorf("--only-whole checks that the storm is whole and nothing else: drop the other rules and --conditions (or drop --only-whole)")
	}
	seen := map[string]bool{}
	for _, r := range c.Max {
		if !slices.Contains(MaxKeys(), r.Key) || r.Max < 0 {
			return fmt.Errorf("--max %q: want KEY=N with N >= 0 and KEY one of %s", r, strings.Join(MaxKeys(), ", "))
		}
		if seen[r.Key] {
			return fmt.Errorf("--max %s: key %q is given twice", r, r.Key)
		}
		seen[r.Key] = true
	}
	for _, g := range c.Conditions {
		if strings.TrimSpace(g) == "" {
			return fmt.Errorf("--conditions: an empty glob matches nothing (use * for every condition)")
		}
	}
	if r := c.MaxInfraRate; r != nil && (*r < 0 || *r > 1) {
		return fmt.Errorf("--max-infra-rate %g: want a rate in [0, 1], e.g. 0.05", *r)
	}
	if r := c.MinDecided; r != nil && !(*r >= 0 && *r <= 1) {
		return fmt.Errorf("--min-decided %g: want a share in [0, 1], e.g. 0.8 (a cell needs at least one decided run whatever it is)", *r)
	}
	return nil
}

// globRE turns a glob (* any text, including /; ? one character) into an
// anchored regexp.
func globRE(g string) *regexp.Regexp {
	q := regexp.QuoteMeta(g)
	q = strings.ReplaceAll(q, `\*`, `.*`)
	q = strings.ReplaceAll(q, `\?`, `.`)
	return regexp.MustCompile("^" + q + "$")
}

// narrows reports whether the rules apply to condition cond.
func (c Config) narrows(cond string) bool {
	if len(c.Conditions) == 0 {
		return true
	}
	for _, g := range c.Conditions {
		if globRE(g).MatchString(cond) {
			return true
		}
	}
	return false
}

// Calibration claims of a gate. **contract**
const (
	Calibrated   = "calibrated"   // the legacy cells found corruption: the storm could see the race
	Uncalibrated = "uncalibrated" // the legacy cells found nothing: the storm proves nothing
	NoClaim      = "none"         // no legacy cells
)

// Calibration is what a storm's legacy cells say about its sharpness.
type Calibration struct {
	Claim       string `json:"claim"`
	LegacyCells int    `json:"legacy_cells"`
	Runs        int    `json:"runs"`
	// Found counts the legacy runs that were corrupted, silent or gap.
	Found int `json:"found"`
}

// Breach is one broken rule in one cell (Cell "" for the storm as a whole).
type Breach struct {
	Rule   string `json:"rule"`
	Cell   string `json:"cell,omitempty"`
	Reason string `json:"reason"`
}

func (b Breach) String() string {
	if b.Cell == "" {
		return b.Rule + ": " + b.Reason
	}
	return b.Rule + ": " + b.Cell + ": " + b.Reason
}

// RulePartial is the rule a partial storm breaks, whatever the rules
// given: a storm missing runs it planned never passes.
const RulePartial = "partial"

// RuleMalformed is the rule of the breach a storm or baseline with
// malformed artifacts adds: what could be read is gated, and never passes.
const RuleMalformed = "malformed"

// RuleStarved is the rule a cell breaks, whatever the rules given, when
// the harness starved most of its runs (their host saturated: infra runs
// of class starved): such a storm measured stormctl's own host, not the
// runtime, and never passes.
const RuleStarved = "starved"

// Storm is a stored storm as gate checks it: its summary, and what it is
// missing of the runs it planned (stormdir.PartialOf; nil when it holds
// them all).
type Storm struct {
	Summary *reports.Summary
	Partial *reports.Partial
}

// Result is a gate's verdict.
type Result struct {
	Passed bool `json:"passed"`
	// Cells is how many cells the rules looked at; Rules how many rules.
	Cells       int         `json:"cells"`
	Rules       int         `json:"rules"`
	Config      Config      `json:"config"`
	Calibration Calibration `json:"calibration"`
	// Partial is what the storm is missing of the runs it planned, and
	// BaselinePartial what the --no-worse baseline is missing; absent when
	// the storm (the baseline) holds them all. Either fails the gate.
	Partial         *reports.Partial `json:"partial,omitempty"`
	BaselinePartial *reports.Partial `json:"baseline_partial,omitempty"`
	Broken          []Breach         `json:"broken"`
}

// Lines are the gate's output: one line per broken rule, or one line
// saying it passed.
func (r *Result) Lines() []string {
	if r.Passed && r.Config.OnlyWhole {
		return []string{fmt.Sprintf("gate passed: the storm is whole: %s, every planned run recorded (--only-whole: no other rule checked)", plural.Count(r.Cells, "cell"))}
	}
	if r.Passed {
		return []string{fmt.Sprintf("gate passed: %s, %s; %s", plural.Count(r.Cells, "cell"), plural.Count(r.Rules, "rule"), r.Calibration.text())}
	}
	var out []string
	for _, b := range r.Broken {
		out = append(out, b.String())
	}
	return out
}

// RuleLines are Lines with completeness aside, for a reader told once
// that the storm is partial (the PR comment): the line of every broken
// rule but RulePartial's, or, when only it broke, one line saying that no
// other rule broke on the runs the storm holds. It never says "gate
// passed" of a partial storm.
func (r *Result) RuleLines() []string {
	if r.Partial == nil {
		return r.Lines()
	}
	var out []string
	for _, b := range r.Broken {
		if b.Rule != RulePartial {
			out = append(out, b.String())
		}
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("partial, and no other rule broken on the runs it holds: %s, %s; %s",
			plural.Count(r.Cells, "cell"), plural.Count(r.Rules, "rule"), r.Calibration.text()))
	}
	return out
}

// Table writes the gate's lines, one a line: what a terminal and a CI log
// show.
func (r *Result) Table(w io.Writer) error {
	for _, l := range r.Lines() {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// Markdown writes the verdict in bold, then the lines as a list.
func (r *Result) Markdown(w io.Writer) error {
	verdict := "passed"
	if !r.Passed {
		verdict = "failed"
	}
	if _, err := fmt.Fprintf(w, "**stormctl gate %s** (%s, %s)\n\n", verdict, plural.Count(r.Cells, "cell"), plural.Count(r.Rules, "rule")); err != nil {
		return err
	}
	for _, l := range r.Lines() {
		if _, err := fmt.Fprintf(w, "- %s\n", strings.ReplaceAll(l, "|", `\|`)); err != nil {
			return err
		}
	}
	return nil
}

func (c Calibration) text() string {
	switch c.Claim {
	case Calibrated:
		return fmt.Sprintf("calibrated: the %d legacy (%s*) cells found %d corrupted/silent/gap runs of %d", c.LegacyCells, LegacyPrefix, c.Found, c.Runs)
	case Uncalibrated:
		return fmt.Sprintf("uncalibrated: the %d legacy (%s*) cells found nothing in %d runs (0 corrupted, 0 silent, 0 gap): this storm could not see the race, so it proves nothing", c.LegacyCells, LegacyPrefix, c.Runs)
	}
	return fmt.Sprintf("no legacy (%s*) cells: no calibration claim", LegacyPrefix)
}

// Check checks storm st against the rules of c (which the caller has
// defaulted and validated). base is the baseline storm for --no-worse (nil
// without one). A partial storm (st.Partial: shards missing or incomplete,
// cells with fewer runs than planned, or runs per cell unknown) never
// passes, whatever the rules: each thing it is missing is a breach of
// RulePartial, listed first; nor does a --no-worse against a partial
// baseline, which is no evidence to compare with. Infra runs never count
// as failures of a rule other than --max infra=N, --max-infra-rate and the
// evidence rule (as runs that decided nothing); a cell whose runs were all infra is not held to
// --require-rejections or --require-true-positives. Every
// gated cell (narrowed, and the control cells under --control-clean) needs
// MinDecided of its runs decided (reports.Cell.Evidenced), whatever the
// rules: a storm that measured nothing never passes. A storm with legacy
// cells that all found nothing is uncalibrated and never passes.
func Check(st Storm, base *Storm, c Config) *Result {
	s := st.Summary
	res := &Result{Rules: c.Rules(), Config: c, Partial: st.Partial}
	if st.Partial != nil {
		for _, r := range st.Partial.Reasons() {
			res.Broken = append(res.Broken, Breach{Rule: RulePartial, Reason: r})
		}
	}
	if c.OnlyWhole {
		if len(s.Cells) == 0 {
			res.Broken = append(res.Broken, Breach{Rule: RulePartial, Reason: "the storm holds no cells: nothing of it can be shown whole"})
		}
		res.Calibration = Calibration{Claim: NoClaim}
		res.Cells = len(s.Cells)
		res.Passed = len(res.Broken) == 0
		return res
	}
	res.Calibration = calibrate(s)
	if res.Calibration.Claim == Uncalibrated {
		res.Broken = append(res.Broken, Breach{Rule: Uncalibrated, Reason: strings.TrimPrefix(res.Calibration.text(), Uncalibrated+": ")})
	}
	var narrowed []*reports.Cell
	// looked are the gated cells: the narrowed ones, and every control
	// cell under --control-clean.
	looked := map[history.CellKey]bool{}
	for _, cell := range s.Cells {
		if c.narrows(cell.Condition) {
			narrowed = append(narrowed, cell)
			looked[cell.Key()] = true
		}
		if c.ControlClean && cell.Scenario == ControlScenario {
			looked[cell.Key()] = true
		}
	}
	add := func(rule string, cell *reports.Cell, format string, a ...any) {
		res.Broken = append(res.Broken, Breach{Rule: rule, Cell: cell.Key().String(), Reason: fmt.Sprintf(format, a...)})
	}
	if len(c.Conditions) > 0 && len(narrowed) == 0 {
		res.Broken = append(res.Broken, Breach{Rule: "--conditions " + strings.Join(c.Conditions, ","),
			Reason: fmt.Sprintf("matches no cell of this storm (its conditions: %s)", strings.Join(s.Conditions(), ", "))})
	}
	empty := map[history.CellKey]bool{}
	for _, cell := range narrowed {
		if cell.Runs == 0 {
			empty[cell.Key()] = true
			add("runs", cell, "no runs recorded (an interrupted storm, or a shard not merged)")
		}
	}
	// The harness rule: a cell most of whose runs the harness starved
	// measured the harness, whichever cells the rules look at.
	for _, cell := range s.Cells {
		if h := cell.Harness; h != nil && 2*h.Starved > cell.Runs {
			add(RuleStarved, cell, "the harness starved %d of %d runs (their host process saturated, reported infra): the storm measured stormctl's host, not the runtime; storm again with --admission auto, more --hosts or fewer --runs-in-flight",
				h.Starved, cell.Runs)
		}
	}
	// The evidence rule: a gated cell whose runs mostly decided nothing
	// (stuck, failed, infra) cannot pass any other rule on what it lacks.
	rate := c.minDecided()
	for _, cell := range s.Cells {
		if looked[cell.Key()] && !empty[cell.Key()] && !cell.Evidenced(rate) {
			add(fmt.Sprintf("--min-decided %g", rate), cell, "not enough evidence: %s (a stuck, failed or infra run shows nothing either way)", cell.Evidence(rate))
		}
	}
	for _, r := range c.Max {
		for _, cell := range narrowed {
			if n := r.count(cell); n > r.Max {
				add("--max "+r.String(), cell, "%d %s of %d runs (max %d)", n, r.Key, cell.Runs, r.Max)
			}
		}
	}
	if c.ControlClean {
		for _, cell := range s.Cells {
			if cell.Scenario != ControlScenario {
				continue
			}
			if cell.Corrupted+cell.Silent+cell.Gap > 0 {
				add("--control-clean", cell, "the control is not clean: %d corrupted, %d silent, %d gap of %d runs (the harness, not the condition, is suspect)",
					cell.Corrupted, cell.Silent, cell.Gap, cell.Runs)
			}
			if cell.Stuck > 0 {
				add("--control-clean", cell, "%d stuck of %d runs: a run that never ended is no evidence the control is clean (the harness or the machine is suspect)",
					cell.Stuck, cell.Runs)
			}
		}
	}
	held := func(cell *reports.Cell) bool { return cell.Scenario != ControlScenario && reports.Measured(cell) > 0 }
	if c.RequireRejections {
		for _, cell := range narrowed {
			if held(cell) && cell.Rejections == 0 {
				add("--require-rejections", cell, "no rejections in %d runs: the fence or guard was never exercised", cell.Runs)
			}
		}
	}
	if c.RequireTruePositives {
		for _, cell := range narrowed {
			switch {
			case !held(cell):
			case cell.TruePositives == nil:
				add("--require-true-positives", cell, "verdicts not computed (true_positives is null): %d rejections without a verdict", cell.Rejections)
			case *cell.TruePositives == 0:
				add("--require-true-positives", cell, "no true positive among %d rejections", cell.Rejections)
			}
		}
	}
	if r := c.MaxInfraRate; r != nil {
		for _, cell := range narrowed {
			if cell.Runs > 0 && float64(cell.Infra)/float64(cell.Runs) > *r {
				add(fmt.Sprintf("--max-infra-rate %g", *r), cell, "%d infra of %d runs (%.1f%%, max %g%%)",
					cell.Infra, cell.Runs, 100*float64(cell.Infra)/float64(cell.Runs), 100**r)
			}
		}
	}
	if c.NoWorse && base != nil && base.Partial != nil {
		res.BaselinePartial = base.Partial
		res.Broken = append(res.Broken, Breach{Rule: "--no-worse", Reason: "the baseline is partial: " + base.Partial.Headline() +
			": a storm missing runs it planned is no evidence to compare with (compare against a whole storm)"})
	}
	if c.NoWorse && base != nil {
		for _, cc := range compare.Compare(base.Summary, s).Cells {
			if cc.Verdict != compare.Worse || !c.narrows(cc.Condition) {
				continue
			}
			add("--no-worse", cc.Head, "worse than the baseline: corrupted %s → %s (p=%s), corrupted+silent %s → %s (p=%s)",
				cc.Corrupted.Base, cc.Corrupted.Head, compare.PValue(*cc.Corrupted.P),
				cc.Bad.Base, cc.Bad.Head, compare.PValue(*cc.Bad.P))
		}
	}
	res.Cells = len(looked)
	res.Passed = len(res.Broken) == 0
	return res
}

// calibrate sums the legacy cells' findings.
func calibrate(s *reports.Summary) Calibration {
	cal := Calibration{Claim: NoClaim}
	for _, c := range s.Cells {
		if !strings.HasPrefix(c.Condition, LegacyPrefix) {
			continue
		}
		cal.LegacyCells++
		cal.Runs += c.Runs
		cal.Found += c.Corrupted + c.Silent + c.Gap
	}
	switch {
	case cal.LegacyCells == 0:
	case cal.Found == 0:
		cal.Claim = Uncalibrated
	default:
		cal.Claim = Calibrated
	}
	return cal
}
