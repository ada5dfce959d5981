package schedule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stormctl/stormctl/internal/base/texttest"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// DefaultRun is the run id of a schedule that names none.
const DefaultRun = "run-fx"

// Skip is the label of a decision a write derives and does not commit.
const Skip = "-"

// The item kinds.
const (
	KindStart    = "start"
	KindList     = "list"
	KindListErr  = "listerr"
	KindWrite    = "write"
	KindFact     = "fact"
	KindFail     = "fail"
	KindInflight = "inflight"
)

// Item is one line of a schedule's interleaving (see the package
// documentation for what each kind does).
type Item struct {
	Kind  string
	Actor string
	// Label is the event a start, fact or fail writes.
	Label string
	// Labels are what a list reads (none: "-") or a write's decisions'.
	Labels []string
	// After is a list's cursor: the label it reads after ("": the start).
	After string
	// At is when the item happened, in ms from the schedule's origin; End
	// is when a list or an inflight append returned, when HasEnd.
	At, End int
	HasEnd  bool
	// More says a list's page said there was more.
	More bool
	// Snapshot says a list was no page but the events a write's answer
	// carried (history.Op.Snapshot): a load by itself, which no page
	// continues.
	Snapshot bool
	// Implicit says the store wrote what a start, write, fact or fail
	// item writes inside another call of its actor (history.Op.Implicit:
	// a 5.0 package's synthetic step_created inside a step_started, a
	// missing run_created inside a run_started).
	Implicit bool
	// Commit are the commit delays of what the item writes, one per event
	// or one for all (none: 1 ms).
	Commit []int
	// Keys, when set, say which decision each of a write's labels commits
	// (its type and correlation id, "type/corr"), wherever the writer
	// derives it: a shrinker's candidates keep a write's decisions when
	// its reads shrink. Not part of the text: Format writes labels by
	// position.
	Keys []string
	// Swap swaps the correlation ids of a write's decisions Swap[0] and
	// Swap[1] (nil: none); View derives a write from another actor's reads.
	Swap []int
	View string
	// Type and Of are a fact's or an inflight append's type and the label
	// of the event that created its operation; Dedup and Payload a fact's
	// (nil Payload: a made-up one).
	Type    eventlog.Type
	Of      string
	Dedup   string
	Payload json.RawMessage
	// Err, Slot and Above are a listerr's failure, or an inflight
	// append's error class.
	Err         string
	Slot, Above int64
}

// StepTime is how long a named step's work lasts (steps NAME=MS).
type StepTime struct {
	Name string
	MS   int
}

// Schedule is a parsed schedule: the run's settings, then its items in
// order.
type Schedule struct {
	// Header holds comment lines Format writes first (without '#').
	Header   []string
	RunID    string
	Scenario string
	Scheme   eventlog.Scheme
	IDs      engine.IDPolicy
	Wake     engine.WakePolicy
	Outcome  history.Outcome
	Detail   string
	// Ended and Quiet are the run's end and quiet period in ms, when set.
	Ended, Quiet       int
	HasEnded, HasQuiet bool
	// Knobs are the condition's other knobs, KEY=VALUE each (knob lines),
	// over main's policy.
	Knobs []string
	// Steps, when set, give the named steps functions whose work lasts
	// their time.
	Steps []StepTime
	Items []Item
}

// Parse reads a schedule's text. It checks the words of each line, not
// what they name: Execute does.
func Parse(text string) (*Schedule, error) {
	s := &Schedule{}
	for _, l := range texttest.Lines(text) {
		if err := s.item(l.Words); err != nil {
			return nil, fmt.Errorf("line %d: %w", l.N, err)
		}
	}
	if s.Scheme == "" || s.Outcome == "" {
		return nil, fmt.Errorf("a schedule needs a scheme and an outcome")
	}
	return s, nil
}

// need fails a line with fewer than n words.
func need(f []string, n int) error {
	if len(f) < n {
		return fmt.Errorf("%s: want at least %d words, got %d", f[0], n, len(f))
	}
	return nil
}

func (s *Schedule) item(f []string) error {
	if err := need(f, 2); err != nil {
		return err
	}
	var err error
	switch f[0] {
	case "run":
		s.RunID = f[1]
	case "scenario":
		s.Scenario = f[1]
	case "scheme":
		s.Scheme, err = eventlog.ParseScheme(f[1])
	case "ids":
		s.IDs = engine.IDPolicy(f[1])
	case "wake":
		s.Wake = engine.WakePolicy(f[1])
	case "outcome":
		s.Outcome = history.Outcome(f[1])
	case "detail":
		s.Detail = strings.Join(f[1:], " ")
	case "ended":
		s.Ended, err = parseMS(f[1])
		s.HasEnded = true
	case "quiet":
		s.Quiet, err = parseMS(f[1])
		s.HasQuiet = true
	case "knob":
		s.Knobs = append(s.Knobs, f[1])
	case "steps":
		s.Steps = []StepTime{}
		for _, x := range strings.Split(f[1], ",") {
			name, v, _ := strings.Cut(x, "=")
			ms, err := parseMS(v)
			if err != nil {
				return err
			}
			s.Steps = append(s.Steps, StepTime{Name: name, MS: ms})
		}
	case KindStart, KindList, KindListErr, KindWrite, KindFact, KindFail, KindInflight:
		it, err := parseItem(f)
		if err != nil {
			return err
		}
		s.Items = append(s.Items, it)
	default:
		return fmt.Errorf("unknown item %q", f[0])
	}
	return err
}

// parseItem reads one line of the interleaving.
func parseItem(f []string) (Item, error) {
	it := Item{Kind: f[0], Actor: f[1]}
	var rest []string
	switch it.Kind {
	case KindStart:
		it.Actor, it.Label, rest = "starter", f[1], f[2:]
	case KindList, KindListErr:
		rest = f[2:]
	case KindWrite, KindFail:
		if err := need(f, 3); err != nil {
			return it, err
		}
		if it.Kind == KindWrite {
			it.Labels = strings.Split(f[2], ",")
		} else {
			it.Label = f[2]
		}
		rest = f[3:]
	case KindFact:
		if err := need(f, 4); err != nil {
			return it, err
		}
		it.Label, it.Type, rest = f[2], eventlog.Type(f[3]), f[4:]
	case KindInflight:
		if err := need(f, 3); err != nil {
			return it, err
		}
		it.Type, rest = eventlog.Type(f[2]), f[3:]
	}
	a, err := kv(it.Kind, rest)
	if err != nil {
		return it, err
	}
	if it.Kind == KindList || it.Kind == KindListErr || it.Kind == KindInflight {
		it.At, it.End, it.HasEnd, err = span(a["at"])
	} else {
		it.At, err = parseMS(a["at"])
	}
	if err != nil {
		return it, err
	}
	if v := a["after"]; v != Skip {
		it.After = v
	}
	_, it.More = a["more"]
	_, it.Snapshot = a["snapshot"]
	_, it.Implicit = a["implicit"]
	if by, ok := a["by"]; ok {
		if by == "" {
			return it, fmt.Errorf("by= names no actor")
		}
		it.Actor = by
	}
	if r, ok := a["read"]; ok && r != Skip {
		it.Labels = strings.Split(r, ",")
	}
	if c, ok := a["commit"]; ok {
		for _, x := range strings.Split(c, ",") {
			d, err := strconv.Atoi(x)
			if err != nil {
				d = 1 // as the fixtures always read it
			}
			it.Commit = append(it.Commit, d)
		}
	}
	if sw := a["swap"]; sw != "" {
		i, j, _ := strings.Cut(sw, ",")
		x, err1 := strconv.Atoi(i)
		y, err2 := strconv.Atoi(j)
		if err1 != nil || err2 != nil || x < 0 || y < 0 {
			return it, fmt.Errorf("bad swap %q", sw)
		}
		it.Swap = []int{x, y}
	}
	it.View, it.Of, it.Dedup, it.Err = a["view"], a["of"], a["dedup"], a["err"]
	if p, ok := a["payload"]; ok {
		if !json.Valid([]byte(p)) {
			return it, fmt.Errorf("payload %q is not JSON", p)
		}
		it.Payload = json.RawMessage(p)
	}
	it.Slot, _ = strconv.ParseInt(a["slot"], 10, 64)
	it.Above, _ = strconv.ParseInt(a["above"], 10, 64)
	return it, nil
}

// flags are the words an item takes without a value.
const flags = "more snapshot implicit"

// keys are the words an item of kind takes after its positional ones
// (see the package documentation).
func keys(kind string) []string {
	switch kind {
	case KindStart:
		return []string{"at", "by", "implicit", "commit", "payload"}
	case KindList:
		return []string{"after", "at", "more", "snapshot", "read"}
	case KindListErr:
		return []string{"after", "at", "more", "err", "slot", "above"}
	case KindWrite:
		return []string{"at", "implicit", "commit", "swap", "view"}
	case KindFact:
		return []string{"of", "at", "implicit", "commit", "dedup", "payload"}
	case KindFail:
		return []string{"at", "implicit", "commit"}
	case KindInflight:
		return []string{"of", "at", "err"}
	}
	return nil
}

// kv parses an item's key=value words and its flags (a flag's value is
// ""). A word the kind does not take, a flag with a value, a key without
// one and a word given twice are errors: a fixture is untrusted input,
// and a word read as nothing would change the schedule silently.
func kv(kind string, words []string) (map[string]string, error) {
	m := map[string]string{}
	for _, w := range words {
		k, v, hasValue := strings.Cut(w, "=")
		flag := slices.Contains(strings.Fields(flags), k)
		switch {
		case !slices.Contains(keys(kind), k):
			return nil, fmt.Errorf("%s takes no %q (it takes %s)", kind, k, strings.Join(keys(kind), ", "))
		case flag && hasValue:
			return nil, fmt.Errorf("%s takes no value (%q)", k, w)
		case !flag && !hasValue:
			return nil, fmt.Errorf("%s needs a value: %s=...", k, k)
		}
		if _, twice := m[k]; twice {
			return nil, fmt.Errorf("%s given twice", k)
		}
		m[k] = v
	}
	return m, nil
}

func parseMS(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bad time %q", s)
	}
	return n, nil
}

// span parses MS or MS-MS.
func span(s string) (start, end int, hasEnd bool, err error) {
	a, b, found := strings.Cut(s, "-")
	if start, err = parseMS(a); err != nil {
		return 0, 0, false, err
	}
	if !found {
		return start, start, false, nil
	}
	end, err = parseMS(b)
	return start, end, true, err
}

// Format writes the schedule's text, which Parse reads back to it.
func (s *Schedule) Format() string {
	var b strings.Builder
	for _, h := range s.Header {
		b.WriteString(strings.TrimRight("# "+h, " ") + "\n")
	}
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s %s\n", k, v)
		}
	}
	line("run", s.RunID)
	line("scenario", s.Scenario)
	line("scheme", string(s.Scheme))
	line("ids", string(s.IDs))
	line("wake", string(s.Wake))
	line("outcome", string(s.Outcome))
	line("detail", s.Detail)
	for _, k := range s.Knobs {
		line("knob", k)
	}
	if s.HasEnded {
		line("ended", strconv.Itoa(s.Ended))
	}
	if s.HasQuiet {
		line("quiet", strconv.Itoa(s.Quiet))
	}
	if s.Steps != nil {
		var parts []string
		for _, st := range s.Steps {
			parts = append(parts, st.Name+"="+strconv.Itoa(st.MS))
		}
		line("steps", strings.Join(parts, ","))
	}
	for _, it := range s.Items {
		b.WriteString(it.Format() + "\n")
	}
	return b.String()
}

// Format writes the item's line.
func (it Item) Format() string {
	w := []string{it.Kind}
	switch it.Kind {
	case KindStart:
		w = append(w, it.Label)
	case KindList, KindListErr:
		w = append(w, it.Actor, "after="+or(it.After, Skip))
	case KindWrite:
		w = append(w, it.Actor, strings.Join(it.Labels, ","))
	case KindFact:
		w = append(w, it.Actor, it.Label, string(it.Type), "of="+it.Of)
	case KindFail:
		w = append(w, it.Actor, it.Label)
	case KindInflight:
		w = append(w, it.Actor, string(it.Type), "of="+it.Of)
	}
	at := "at=" + strconv.Itoa(it.At)
	if it.HasEnd {
		at += "-" + strconv.Itoa(it.End)
	}
	n := len(w) // the positional words
	w = append(w, at)
	if it.Kind == KindStart && it.Actor != "" && it.Actor != "starter" {
		w = append(w, "by="+it.Actor)
	}
	if it.More {
		w = append(w, "more")
	}
	if it.Snapshot {
		w = append(w, "snapshot")
	}
	if it.Implicit {
		w = append(w, "implicit")
	}
	if it.Kind == KindList {
		w = append(w, "read="+or(strings.Join(it.Labels, ","), Skip))
	}
	if it.Kind == KindListErr || (it.Kind == KindInflight && it.Err != "") {
		w = append(w, "err="+it.Err)
	}
	if it.Slot != 0 || it.Above != 0 {
		w = append(w, "slot="+strconv.FormatInt(it.Slot, 10), "above="+strconv.FormatInt(it.Above, 10))
	}
	if len(it.Commit) > 0 {
		var ds []string
		for _, d := range it.Commit {
			ds = append(ds, strconv.Itoa(d))
		}
		w = append(w, "commit="+strings.Join(ds, ","))
	}
	if len(it.Swap) == 2 {
		w = append(w, fmt.Sprintf("swap=%d,%d", it.Swap[0], it.Swap[1]))
	}
	if it.View != "" {
		w = append(w, "view="+it.View)
	}
	if it.Dedup != "" {
		w = append(w, "dedup="+it.Dedup)
	}
	if it.Payload != nil {
		w = append(w, "payload="+PayloadWord(it.Payload))
	}
	// Only the words the kind takes: Parse reads the line back.
	takes := keys(it.Kind)
	opt := slices.DeleteFunc(w[n:], func(word string) bool {
		k, _, _ := strings.Cut(word, "=")
		return !slices.Contains(takes, k)
	})
	return strings.Join(append(w[:n], opt...), " ")
}

// PayloadWord is a payload as one word of a line: compact JSON whose
// spaces and '#' (possible inside strings only) are written \u0020 and
// \u0023, which JSON reads back as the same characters.
func PayloadWord(p json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, p); err != nil {
		return "null"
	}
	r := strings.NewReplacer(" ", `\u0020`, "#", `\u0023`)
	return r.Replace(b.String())
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Filter returns a copy of s with each item as keep makes it, those it
// drops left out.
func (s *Schedule) Filter(keep func(Item) (Item, bool)) *Schedule {
	return s.FilterIndexed(func(_ int, it Item) (Item, bool) { return keep(it) })
}

// FilterIndexed is Filter with each item's index in s.
func (s *Schedule) FilterIndexed(keep func(int, Item) (Item, bool)) *Schedule {
	out := *s
	out.Items = nil
	for i, it := range s.Items {
		if it, ok := keep(i, it); ok {
			out.Items = append(out.Items, it)
		}
	}
	return &out
}
