// Package timeline draws one explained run as a self-contained HTML page
// with an inline SVG: one lane per actor (invocations, step workers, hook
// senders, drivers), time on x, every read as a bar over its page's span,
// every committed write as a line from its mint to its commit. The
// offending write, the writer's stale view and the events it lacked are
// drawn in red. Nothing external is needed to view it: no scripts, no
// fonts, no images; hovering shows each mark's details (SVG titles).
//
// The file never exceeds a byte budget (MaxBytes by default): beyond it
// the page drops details in steps (tooltips of ordinary marks, then
// ordinary reads merged per lane, then ordinary marks altogether) and says
// which it dropped.
package timeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/history"
)

// MaxBytes is the hard cap on a timeline file: 2 MB.
const MaxBytes = 2 << 20

// ErrTooSmall is returned when even the most thinned page does not fit
// the budget.
var ErrTooSmall = errors.New("timeline: the byte budget is too small for the run's lanes")

// Geometry of the drawing, in SVG user units (pixels at 100%).
const (
	laneH     = 12
	labelW    = 90
	topPad    = 28
	minWidth  = 1200
	maxWidth  = 8000
	pxPerMs   = 0.25
	tickGoal  = 12
	markHalfH = 4
)

// detail is how much a rendering keeps.
type detail int

const (
	full       detail = iota // every mark with its tooltip
	noTips                   // ordinary marks without tooltips
	mergeRead                // ordinary reads merged per lane, no tooltips
	onlyMarked               // only the highlighted marks and the lanes
)

var detailNote = map[detail]string{
	full:       "",
	noTips:     "thinned to fit the size budget: tooltips are kept only on highlighted marks",
	mergeRead:  "thinned to fit the size budget: tooltips only on highlighted marks, and each lane's ordinary reads merged into spans",
	onlyMarked: "thinned to fit the size budget: only the highlighted marks are drawn, ordinary reads and writes are left out",
}

// Write renders the run to w in at most budget bytes (MaxBytes when
// budget <= 0).
func Write(w io.Writer, in explain.Input, ex explain.Explanation, budget int) error {
	if budget <= 0 {
		budget = MaxBytes
	}
	p := plan(in, ex)
	for d := full; d <= onlyMarked; d++ {
		var b bytes.Buffer
		p.render(&b, d)
		if b.Len() <= budget {
			_, err := w.Write(b.Bytes())
			return err
		}
	}
	return fmt.Errorf("%w (%d bytes)", ErrTooSmall, budget)
}

// mark is one drawn element.
type mark struct {
	lane   int
	t0, t1 time.Time
	kind   string // "read", "write", "fail", "conflict", "missing"
	hot    bool   // highlighted (red)
	title  string
}

// layout is a run prepared for drawing.
type layout struct {
	in     explain.Input
	ex     explain.Explanation
	lanes  []string
	t0, t1 time.Time
	marks  []mark
}

// laneOrder sorts actors: the starter, invocations, step workers, hook
// senders, drivers, others; numbered actors by number.
func laneOrder(a, b string) int {
	rank := func(s string) (int, int) {
		kind, num, _ := strings.Cut(s, "-")
		n, _ := strconv.Atoi(num)
		switch kind {
		case "starter":
			return 0, n
		case "inv":
			return 1, n
		case "step":
			return 2, n
		case "hook":
			return 3, n
		case "driver":
			return 4, n
		}
		return 5, n
	}
	ka, na := rank(a)
	kb, nb := rank(b)
	if ka != kb {
		return ka - kb
	}
	if na != nb {
		return na - nb
	}
	return strings.Compare(a, b)
}

func plan(in explain.Input, ex explain.Explanation) *layout {
	p := &layout{in: in, ex: ex}
	seen := map[string]bool{}
	for _, op := range in.Ops {
		a := op.Actor
		if a == "" {
			a = "?"
		}
		if !seen[a] {
			seen[a] = true
			p.lanes = append(p.lanes, a)
		}
	}
	slices.SortFunc(p.lanes, laneOrder)
	lane := map[string]int{}
	for i, a := range p.lanes {
		lane[a] = i
	}
	stale := map[string]bool{} // page key: actor + start
	if v := ex.View; v != nil {
		for _, pg := range v.Pages {
			stale[v.Actor+pg.Start.String()] = true
		}
	}
	missing := map[string]bool{} // id -> decisive
	for _, m := range ex.Missing {
		missing[m.ID] = m.Decisive
	}
	offending := ""
	if ex.Offending != nil {
		offending = ex.Offending.ID
	}
	extend := func(ts ...time.Time) {
		for _, t := range ts {
			if t.IsZero() {
				continue
			}
			if p.t0.IsZero() || t.Before(p.t0) {
				p.t0 = t
			}
			if t.After(p.t1) {
				p.t1 = t
			}
		}
	}
	for _, op := range in.Ops {
		a := op.Actor
		if a == "" {
			a = "?"
		}
		l := lane[a]
		extend(op.Start, op.End)
		switch {
		case op.Kind == history.OpList && op.Read != nil:
			hot := stale[op.Actor+op.Start.String()]
			p.marks = append(p.marks, mark{lane: l, t0: op.Start, t1: op.End, kind: "read", hot: hot,
				title: fmt.Sprintf("%s read %d events after %s at %s (%s)%s", a, op.Read.N, op.After.Text(), clock(op.Start),
					dur(op.End.Sub(op.Start)), moreText(op.Read.More))})
		case op.Kind == history.OpList:
			p.marks = append(p.marks, mark{lane: l, t0: op.Start, t1: op.End, kind: "fail", hot: true,
				title: fmt.Sprintf("%s read after %s at %s failed: %s", a, op.After.Text(), clock(op.Start), op.Err)})
		case len(op.Wrote) > 0:
			for _, w := range op.Wrote {
				if w.ID == "" {
					p.marks = append(p.marks, mark{lane: l, t0: op.Start, t1: op.End, kind: "conflict",
						title: fmt.Sprintf("%s tried %s %s at %s: %s", a, w.Type, w.CorrelationID, clock(op.Start), orText(op.Err, "not written"))})
					continue
				}
				m0, m1 := w.MintedAt, w.CommittedAt
				if m0.IsZero() {
					m0 = op.Start
				}
				if m1.IsZero() {
					m1 = op.End
				}
				extend(m0, m1)
				kind, hot := "write", w.ID == offending
				decisive, lacked := missing[w.ID]
				if lacked {
					kind, hot = "lacked", true
					if decisive {
						kind = "missing"
					}
				}
				what := "wrote"
				switch {
				case w.ID == offending:
					what = "wrote the OFFENDING"
				case decisive:
					what = "wrote (missing from the stale view, and decisive)"
				case lacked:
					what = "wrote (missing from the stale view)"
				}
				p.marks = append(p.marks, mark{lane: l, t0: m0, t1: m1, kind: kind, hot: hot,
					title: fmt.Sprintf("%s %s %s %s %s: minted %s, committed %s (%s)", a, what, w.Type, w.CorrelationID, w.ID,
						clock(m0), clock(m1), dur(m1.Sub(m0)))})
			}
		}
	}
	return p
}

func moreText(more bool) string {
	if more {
		return ", more"
	}
	return ""
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func dur(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}
