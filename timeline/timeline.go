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
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/explain"
	"github.com/stormctl/stormctl/worlds"
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
		case op.Kind == worlds.OpList && op.Read != nil:
			hot := stale[op.Actor+op.Start.String()]
			p.marks = append(p.marks, mark{lane: l, t0: op.Start, t1: op.End, kind: "read", hot: hot,
				title: fmt.Sprintf("%s read %d events after %s at %s (%s)%s", a, op.Read.N, cursorText(op.After), clock(op.Start),
					dur(op.End.Sub(op.Start)), moreText(op.Read.More))})
		case op.Kind == worlds.OpList:
			p.marks = append(p.marks, mark{lane: l, t0: op.Start, t1: op.End, kind: "fail", hot: true,
				title: fmt.Sprintf("%s read after %s at %s failed: %s", a, cursorText(op.After), clock(op.Start), op.Err)})
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

func cursorText(c eventlog.Cursor) string {
	switch {
	case c.IsZero():
		return "start"
	case c.Seq != 0:
		return fmt.Sprintf("seq %d", c.Seq)
	}
	return c.ID
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func dur(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

// panel is one drawing: a time window and the lanes shown in it.
type panel struct {
	p      *layout
	t0, t1 time.Time
	w      float64
	lanes  []int       // lane indexes shown, in order
	row    map[int]int // lane index -> row
}

// newPanel frames [t0, t1] over the lanes that have a mark in it (all
// lanes when all).
func (p *layout) newPanel(t0, t1 time.Time, width float64, all bool) *panel {
	pn := &panel{p: p, t0: t0, t1: t1, w: width, row: map[int]int{}}
	used := map[int]bool{}
	for _, m := range p.marks {
		if all || (!m.t1.Before(t0) && !m.t0.After(t1)) {
			used[m.lane] = true
		}
	}
	for i := range p.lanes {
		if used[i] || all {
			pn.row[i] = len(pn.lanes)
			pn.lanes = append(pn.lanes, i)
		}
	}
	return pn
}

// fullWidth is the overview's time-axis width in pixels.
func (p *layout) fullWidth() float64 {
	ms := float64(p.t1.Sub(p.t0)) / float64(time.Millisecond)
	return math.Max(minWidth, math.Min(maxWidth, ms*pxPerMs))
}

// x places t on the panel's axis.
func (pn *panel) x(t time.Time) float64 {
	span := float64(pn.t1.Sub(pn.t0))
	if span <= 0 {
		return labelW
	}
	return labelW + float64(t.Sub(pn.t0))/span*pn.w
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

const style = `body{font:13px sans-serif;margin:16px;color:#222}
h1{font-size:16px;margin:0 0 4px}
h2{font-size:14px;margin:14px 0 4px}
.sum{margin:4px 0 8px}
ol{margin:4px 0 12px;padding-left:22px;max-width:1400px}
li{margin:2px 0}
.note{color:#a40}
.legend span{display:inline-block;margin-right:14px}
.sw{display:inline-block;width:18px;height:8px;vertical-align:middle;margin-right:4px}
.scroll{overflow:auto;border:1px solid #ccc;max-height:80vh}
svg text{font:10px sans-serif;fill:#333}
.lane{fill:#f4f4f4}
.r{fill:#7a9cc6}
.w{stroke:#555;stroke-width:1.5;fill:none}
.c{stroke:#bbb;stroke-width:1;fill:none}
.f{fill:#e90}
.hot{fill:#d00}
.hw{stroke:#d00;stroke-width:3;fill:none}
.m{stroke:#f70;stroke-width:3.5;fill:none}
.l{stroke:#fb8;stroke-width:1.5;fill:none}
.tick{stroke:#ddd}
`

// focusWindow is the span of the explained chain: the stale view, the
// events it lacked, the offending write and the first reader that
// disagreed, with a margin.
func (p *layout) focusWindow() (time.Time, time.Time, bool) {
	ex := p.ex
	var t0, t1 time.Time
	add := func(ts ...time.Time) {
		for _, t := range ts {
			if t.IsZero() {
				continue
			}
			if t0.IsZero() || t.Before(t0) {
				t0 = t
			}
			if t.After(t1) {
				t1 = t
			}
		}
	}
	if v := ex.View; v != nil {
		for _, pg := range v.Pages {
			add(pg.Start, pg.End)
		}
	}
	for _, m := range ex.Missing {
		add(m.MintedAt, m.CommittedAt)
	}
	if o := ex.Offending; o != nil {
		add(o.MintedAt, o.CommittedAt)
	}
	if d := ex.Disagreed; d != nil {
		add(d.At)
	}
	if t0.IsZero() || !t1.After(t0) {
		return t0, t1, false
	}
	margin := max(t1.Sub(t0)/10, 20*time.Millisecond)
	return t0.Add(-margin), t1.Add(margin), true
}

// render writes the page at detail d.
func (p *layout) render(b *bytes.Buffer, d detail) {
	ex := p.ex
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>")
	b.WriteString(html.EscapeString("stormctl timeline " + ex.Run))
	b.WriteString("</title><style>\n" + style + "</style></head><body>\n")
	fmt.Fprintf(b, "<h1>%s</h1>\n", html.EscapeString(fmt.Sprintf("%s · %s · %s · %s", ex.Run, ex.Cell, ex.Outcome, orText(ex.Class, "no class"))))
	if ex.Summary != "" {
		fmt.Fprintf(b, "<div class=\"sum\">%s</div>\n", html.EscapeString(ex.Summary))
	}
	if len(ex.Steps) > 0 {
		b.WriteString("<ol>\n")
		for _, s := range ex.Steps {
			_, text, _ := strings.Cut(s, ". ")
			fmt.Fprintf(b, "<li>%s</li>\n", html.EscapeString(text))
		}
		b.WriteString("</ol>\n")
	}
	if n := detailNote[d]; n != "" {
		fmt.Fprintf(b, "<p class=\"note\">%s (cap %d bytes).</p>\n", html.EscapeString(n), MaxBytes)
	}
	b.WriteString(`<div class="legend"><span><i class="sw" style="background:#7a9cc6"></i>read (a page, start to end)</span>` +
		`<span><i class="sw" style="background:#d00"></i>the writer's stale view / the offending write</span>` +
		`<span><i class="sw" style="background:#555;height:2px"></i>write: mint to commit</span>` +
		`<span><i class="sw" style="background:#f70;height:4px"></i>an event the view lacked that decided the write</span>` +
		`<span><i class="sw" style="background:#fb8;height:2px"></i>another event it lacked</span>` +
		`<span><i class="sw" style="background:#bbb;height:1px"></i>write not committed (conflict, error)</span>` +
		`<span><i class="sw" style="background:#e90"></i>read refused (hole, gap)</span> Hover a mark for its details.</div>` + "\n")
	if f0, f1, ok := p.focusWindow(); ok {
		fmt.Fprintf(b, "<h2>The chain: %s to %s (%s), the lanes active in it</h2>\n", clock(f0), clock(f1), f1.Sub(f0).Round(time.Millisecond))
		p.newPanel(f0, f1, focusWidth, false).draw(b, d)
	}
	fmt.Fprintf(b, "<h2>The whole run: %s to %s (%s), %d lanes</h2>\n", clock(p.t0), clock(p.t1), p.t1.Sub(p.t0).Round(time.Millisecond), len(p.lanes))
	p.newPanel(p.t0, p.t1, p.fullWidth(), true).draw(b, d)
	b.WriteString("</body></html>\n")
}

// focusWidth is the chain panel's axis width in pixels.
const focusWidth = 1300

// draw writes the panel's SVG at detail d.
func (pn *panel) draw(b *bytes.Buffer, d detail) {
	p := pn.p
	h := float64(topPad + laneH*len(pn.lanes) + 8)
	total := labelW + pn.w + 20
	fmt.Fprintf(b, "<div class=\"scroll\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%s\" height=\"%s\">\n", num(total), num(h))
	pn.axis(b, h)
	for r, i := range pn.lanes {
		y := float64(topPad + r*laneH)
		if r%2 == 0 {
			fmt.Fprintf(b, "<rect class=\"lane\" x=\"0\" y=\"%s\" width=\"%s\" height=\"%d\"/>", num(y), num(total), laneH)
		}
		fmt.Fprintf(b, "<text x=\"2\" y=\"%s\">%s</text>\n", num(y+laneH-3), html.EscapeString(p.lanes[i]))
	}
	if d >= mergeRead {
		pn.mergedReads(b, d)
	}
	for _, m := range p.marks {
		if _, shown := pn.row[m.lane]; !shown || m.t1.Before(pn.t0) || m.t0.After(pn.t1) {
			continue
		}
		if !m.hot && (d == onlyMarked || (d == mergeRead && m.kind == "read")) {
			continue
		}
		pn.mark(b, m, m.hot || d == full)
	}
	if o := p.ex.Offending; o != nil && !o.CommittedAt.IsZero() && !o.CommittedAt.Before(pn.t0) && !o.CommittedAt.After(pn.t1) {
		x := pn.x(o.CommittedAt)
		fmt.Fprintf(b, "<line class=\"hw\" x1=\"%s\" y1=\"%d\" x2=\"%s\" y2=\"%s\" stroke-dasharray=\"4 4\" opacity=\"0.4\"><title>%s</title></line>\n",
			num(x), topPad-6, num(x), num(h), html.EscapeString("the offending "+string(o.Type)+" "+o.CorrelationID+" committed at "+clock(o.CommittedAt)))
	}
	b.WriteString("</svg></div>\n")
}

// axis draws time ticks.
func (pn *panel) axis(b *bytes.Buffer, h float64) {
	span := pn.t1.Sub(pn.t0)
	if span <= 0 {
		return
	}
	step := niceStep(span / tickGoal)
	for t := time.Duration(0); t <= span; t += step {
		x := pn.x(pn.t0.Add(t))
		fmt.Fprintf(b, "<line class=\"tick\" x1=\"%s\" y1=\"%d\" x2=\"%s\" y2=\"%s\"/><text x=\"%s\" y=\"12\">+%s</text>\n",
			num(x), topPad-4, num(x), num(h), num(x+2), t.String())
	}
	fmt.Fprintf(b, "<text x=\"2\" y=\"24\">%s UTC</text>\n", clock(pn.t0))
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten milliseconds.
func niceStep(d time.Duration) time.Duration {
	step := time.Millisecond
	for {
		for _, f := range []time.Duration{1, 2, 5} {
			if step*f >= d {
				return step * f
			}
		}
		step *= 10
	}
}

// minBar is the narrowest a read is drawn, so a fast page stays visible.
const minBar = 2

// mark writes one mark, with its tooltip when tip.
func (pn *panel) mark(b *bytes.Buffer, m mark, tip bool) {
	y := float64(topPad + pn.row[m.lane]*laneH + laneH/2)
	x0, x1 := pn.x(m.t0), pn.x(m.t1)
	var el string
	switch m.kind {
	case "read", "fail":
		x1 = math.Max(x1, x0+minBar)
		cls := "r"
		switch {
		case m.hot && m.kind == "read":
			cls = "hot"
		case m.kind == "fail":
			cls = "f"
		}
		el = fmt.Sprintf("<rect class=\"%s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%d\"", cls, num(x0), num(y-markHalfH), num(x1-x0), 2*markHalfH)
	default:
		x1 = math.Max(x1, x0+1)
		cls := map[string]string{"write": "w", "conflict": "c", "missing": "m", "lacked": "l"}[m.kind]
		if m.hot && m.kind == "write" {
			cls = "hw"
		}
		// The line from mint to commit, with ticks at both ends.
		el = fmt.Sprintf("<path class=\"%s\" d=\"M%s %sv%dM%s %sH%sM%s %sv%d\"", cls,
			num(x0), num(y-markHalfH), 2*markHalfH, num(x0), num(y), num(x1), num(x1), num(y-markHalfH), 2*markHalfH)
	}
	b.WriteString(el)
	if tip && m.title != "" {
		fmt.Fprintf(b, "><title>%s</title></%s>\n", html.EscapeString(m.title), tag(el))
		return
	}
	b.WriteString("/>\n")
}

func tag(el string) string {
	t, _, _ := strings.Cut(strings.TrimPrefix(el, "<"), " ")
	return t
}

// mergedReads draws each lane's ordinary reads as spans where they
// overlap or nearly touch (within a pixel).
func (pn *panel) mergedReads(b *bytes.Buffer, d detail) {
	if d == onlyMarked {
		return
	}
	type span struct{ x0, x1 float64 }
	byLane := map[int][]span{}
	var order []int
	for _, m := range pn.p.marks {
		if _, shown := pn.row[m.lane]; m.kind != "read" || m.hot || !shown || m.t1.Before(pn.t0) || m.t0.After(pn.t1) {
			continue
		}
		x0 := pn.x(m.t0)
		x1 := math.Max(pn.x(m.t1), x0+minBar)
		s, seen := byLane[m.lane]
		if !seen {
			order = append(order, m.lane)
		}
		if n := len(s); n > 0 && x0 <= s[n-1].x1+1 {
			s[n-1].x1 = math.Max(s[n-1].x1, x1)
		} else {
			s = append(s, span{x0, x1})
		}
		byLane[m.lane] = s
	}
	for _, lane := range order {
		y := float64(topPad + pn.row[lane]*laneH + laneH/2)
		for _, s := range byLane[lane] {
			fmt.Fprintf(b, "<rect class=\"r\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%d\"/>\n", num(s.x0), num(y-markHalfH), num(s.x1-s.x0), 2*markHalfH)
		}
	}
}
