package timeline

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file draws a planned layout: the page, its panels, their marks.

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
