package pgattach

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Layout is the evidence the layout of a table was decided on: what the
// ids of the rows read were. It describes the rows read, so Options.RunID
// and Options.Since narrow it with them (a mixed table's slot runs read
// alone are found to be slot).
//
// The rule (decideLayout): a table with a seq column is SchemeSeq, whatever
// its ids. Without one, a table whose every id is a slot id (eventlog.
// SlotPosition: "evnt_" and a 26-digit position) is SchemeSlot; a table
// with no slot id is SchemeULID (ids order the log by their bytes, ULIDs or
// not); a table with some of each is Mixed and read as SchemeULID, with the
// runs that hold slot ids named, since its slot runs get no slot findings.
// (A zero-padded slot id sorts by its position, so id order is still right
// for them; only the holes, seals and seal races are not counted.) An empty
// read is SchemeULID.
type Layout struct {
	// Rows counts the rows read; SlotIDs those whose id is a slot id, ULIDs
	// those whose id is a ULID (bare or after a prefix such as "wevt_": the
	// ids with a mint time), Noops those of type noop (spec 7 seals).
	Rows    int `json:"rows"`
	SlotIDs int `json:"slot_ids"`
	ULIDs   int `json:"ulids"`
	Noops   int `json:"noops"`
	// Mixed is set when a table without seq held slot ids and other ids.
	Mixed bool `json:"mixed"`
	// SlotRuns counts, in a mixed table, the runs whose every id is a slot
	// id, and MixedRuns the runs holding both kinds; SlotRunIDs and
	// MixedRunIDs name the first few of each, in run id order.
	SlotRuns    int      `json:"slot_runs,omitempty"`
	MixedRuns   int      `json:"mixed_runs,omitempty"`
	SlotRunIDs  []string `json:"slot_run_ids,omitempty"`
	MixedRunIDs []string `json:"mixed_run_ids,omitempty"`
	// Why is one line for a person: the layout found and why.
	Why string `json:"why"`
}

// namedRuns bounds how many runs of each kind a mixed Layout names.
const namedRuns = 3

// slotPosition is eventlog.SlotPosition of the id b, which comes from a
// foreign database: any bytes are allowed. It runs on every row as it
// arrives, so an id of another length or prefix costs a comparison.
func slotPosition(b []byte) (int64, bool) {
	if len(b) != len(eventlog.SlotPrefix)+eventlog.SlotDigits || string(b[:len(eventlog.SlotPrefix)]) != eventlog.SlotPrefix {
		return 0, false
	}
	return eventlog.SlotPosition(unsafe.String(unsafe.SliceData(b), len(b))) // not kept past the call
}

// runKinds is what decideLayout needs of one run: its id, how many rows it
// has and how many of them have a slot id.
type runKinds struct {
	id            string
	rows, slotIDs int
}

// decideLayout decides the table's scheme from whether it has a seq column,
// the counts of what its ids were (Rows, SlotIDs, Noops) and, per run, the
// slot ids among its rows (needed only for a mixed table); it fills in
// Mixed and the runs a mixed table names. It leaves Why to explain, once
// ULIDs are counted.
func decideLayout(hasSeq bool, l Layout, runs []runKinds) (eventlog.Scheme, Layout) {
	l.Mixed, l.SlotRuns, l.MixedRuns, l.SlotRunIDs, l.MixedRunIDs = false, 0, 0, nil, nil
	switch {
	case hasSeq:
		return eventlog.SchemeSeq, l
	case l.Rows > 0 && l.SlotIDs == l.Rows:
		return eventlog.SchemeSlot, l
	case l.SlotIDs == 0:
		return eventlog.SchemeULID, l
	}
	l.Mixed = true
	for _, r := range runs {
		switch {
		case r.slotIDs == 0:
		case r.slotIDs == r.rows:
			l.SlotRuns++
			l.SlotRunIDs = append(l.SlotRunIDs, r.id)
		default:
			l.MixedRuns++
			l.MixedRunIDs = append(l.MixedRunIDs, r.id)
		}
	}
	l.SlotRunIDs, l.MixedRunIDs = firstRuns(l.SlotRunIDs), firstRuns(l.MixedRunIDs)
	return eventlog.SchemeULID, l
}

// explain sets Why: the layout s that decideLayout found, and why.
func (l *Layout) explain(s eventlog.Scheme) {
	noops := ""
	if l.Noops > 0 {
		noops = fmt.Sprintf("; %s noop %s", commas(l.Noops), plural.Word(l.Noops, "row", "rows"))
	}
	ulids := fmt.Sprintf("%s of %s are ULIDs", commas(l.ULIDs), commas(l.Rows))
	if l.ULIDs < l.Rows {
		ulids += fmt.Sprintf(", %s neither (ordered by their bytes)", commas(l.Rows-l.ULIDs))
	}
	switch {
	case s == eventlog.SchemeSeq:
		l.Why = fmt.Sprintf("seq column — seq orders each run (id order in a run where a row has none); %s %s%s",
			commas(l.Rows), plural.Word(l.Rows, "row", "rows"), noops)
	case s == eventlog.SchemeSlot:
		if noops == "" {
			noops = "; no noop rows"
		}
		l.Why = fmt.Sprintf("slot ids (spec 6/7) — %s of %s ids are evnt_ positions%s", commas(l.SlotIDs), commas(l.Rows), noops)
	case l.Mixed:
		var where []string
		if l.SlotRuns > 0 {
			where = append(where, fmt.Sprintf("%s %s only slot ids (%s)", commas(l.SlotRuns),
				plural.Word(l.SlotRuns, "run holds", "runs hold"), named(l.SlotRunIDs, l.SlotRuns)))
		}
		if l.MixedRuns > 0 {
			where = append(where, fmt.Sprintf("%s %s both kinds (%s)", commas(l.MixedRuns),
				plural.Word(l.MixedRuns, "run mixes", "runs mix"), named(l.MixedRunIDs, l.MixedRuns)))
		}
		l.Why = fmt.Sprintf("mixed ids, read as ulid — %s of %s ids are evnt_ positions, %s %s not; %s%s; no slot findings",
			commas(l.SlotIDs), commas(l.Rows), commas(l.Rows-l.SlotIDs), plural.Word(l.Rows-l.SlotIDs, "is", "are"), strings.Join(where, ", "), noops)
	case l.Rows == 0:
		l.Why = "ulid ids — no seq column; no rows read"
	default:
		l.Why = fmt.Sprintf("ulid ids — no seq column and none of the ids is an evnt_ position; %s%s", ulids, noops)
	}
}

// firstRuns is the namedRuns smallest run ids of ids, sorted.
func firstRuns(ids []string) []string {
	slices.Sort(ids)
	return slices.Clone(ids[:min(len(ids), namedRuns)])
}

// named lists ids, with an ellipsis when they are fewer than n, each
// quoted if it could break the line (it comes from a foreign database) and
// cut short if long.
func named(ids []string, n int) string {
	out := make([]string, 0, len(ids)+1)
	for _, id := range ids {
		out = append(out, shown(id))
	}
	if n > len(ids) {
		out = append(out, "…")
	}
	return strings.Join(out, ", ")
}

// maxShown bounds the bytes of a run id a Layout's line shows.
const maxShown = 64

// shown is id as a line shows it: as is when it is short and plain, else
// cut to maxShown bytes (on a rune boundary) and quoted.
func shown(id string) string {
	plain := id != "" && len(id) <= maxShown && strings.IndexFunc(id, func(r rune) bool {
		return r == utf8.RuneError || r == ',' || r == '(' || r == ')' || !unicode.IsGraphic(r) || unicode.IsSpace(r)
	}) < 0
	if plain {
		return id
	}
	if len(id) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(id[cut]) {
			cut--
		}
		return strconv.Quote(id[:cut]) + "…"
	}
	return strconv.Quote(id)
}

// commas writes n with thousands separators (1,234).
func commas(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
