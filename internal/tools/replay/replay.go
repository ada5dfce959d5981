package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// Options say how often to replay and whom to tell of the progress.
type Options struct {
	// Repeat is how many times each invocation is replayed (1 when zero).
	Repeat int
	// Actors, when set, names the invocations to replay (by actor); the
	// others are left out of the report.
	Actors []string
	// Progress, when set, is told after every replay of an invocation how
	// many of total are done. It is called from several goroutines, one
	// call at a time.
	Progress func(done, total int)
}

// The verdicts of an invocation's replays.
const (
	// Every: every replay did what the record holds.
	Every = "every time"
	// Sometimes: some replays did, others did not.
	Sometimes = "sometimes"
	// Never: no replay did.
	Never = "never"
	// Cut: the record ends before the replay did, every time: the run ended
	// (or the storm stopped it) while the invocation was in flight.
	Cut = "cut"
)

// Report is what replaying one run found.
type Report struct {
	Run     string          `json:"run"`
	Cell    string          `json:"cell,omitempty"`
	Outcome history.Outcome `json:"outcome"`
	Repeat  int             `json:"repeat"`
	// Recorded is the divergence the run's run_failed carries, with the
	// invocations that wrote it; nil when no invocation wrote one.
	Recorded *Recorded `json:"recorded,omitempty"`
	// Reproduced counts the repetitions in which every invocation that
	// wrote the recorded divergence did again exactly what it recorded
	// (same reads, same run_failed, same error and event).
	Reproduced int `json:"reproduced"`
	// Verdict is Every, Sometimes or Never for the recorded divergence;
	// "" when there is none.
	Verdict string `json:"verdict,omitempty"`
	// Divergences compares the run's recorded count of diverged replays
	// with the first repetition's.
	Divergences DivergenceCount `json:"divergences"`
	// Invocations holds every invocation's replays, in the order they
	// first appear in the history.
	Invocations []Invocation `json:"invocations"`
	// Varied names the invocations whose replays did not all do the same
	// from the same reads: the nondeterminism is inside the engine.
	Varied []string `json:"varied,omitempty"`
	// Summary is the report in one line.
	Summary string `json:"summary"`
}

// Recorded is the recorded divergence of a run: the error its run_failed
// carries and who wrote it.
type Recorded struct {
	Error string   `json:"error"`
	By    []string `json:"by"`
}

// DivergenceCount is the run's count of diverged replays as recorded
// (runs.jsonl's stats) and as the first repetition replayed them.
type DivergenceCount struct {
	Recorded int64 `json:"recorded"`
	Replayed int   `json:"replayed"`
	// Unknown says the run's count was not recorded (Recorded is no count).
	Unknown bool `json:"unknown,omitempty"`
}

// Invocation is what one recorded invocation's replays did.
type Invocation struct {
	Actor string `json:"actor"`
	// Ops and Pages count its recorded operations and the pages among
	// them; Exact says every page was rebuilt with its recorded count and
	// id hash (the reads served are exactly those it read).
	Ops   int  `json:"ops"`
	Pages int  `json:"pages"`
	Exact bool `json:"exact"`
	// Recorded is what it wrote, in a few words; Failed says it wrote the
	// run's run_failed.
	Recorded string `json:"recorded"`
	Failed   bool   `json:"failed,omitempty"`
	// Reproduced counts the replays that did exactly what it recorded, and
	// Verdict says how often that was (Every, Sometimes, Never, Cut).
	Reproduced int    `json:"reproduced"`
	Verdict    string `json:"verdict"`
	// Behaviours are its replays' distinct behaviours, most frequent
	// first: more than one means it varied from the same reads.
	Behaviours []Behaviour `json:"behaviours"`
	// Unordered says where its recorded operations are not in the order
	// they started ("" when they are): a replay serves them in the
	// recorded order, so one that never reproduces may be a record out of
	// order, not an engine that varies (history.jsonl of a storm recorded
	// before 2026-12-06 could hold a late writer's first lines ahead of its
	// run's).
	Unordered string `json:"unordered,omitempty"`
}

// unordered says where one of ops (one invocation's, as recorded) ended
// before the operation recorded ahead of it started, "" when none did.
// Operations that overlapped (the runtime's concurrent creates, recorded
// as they returned) are in order whichever comes first.
func unordered(ops []history.Op) string {
	for k := 1; k < len(ops); k++ {
		if ops[k].End.Before(ops[k-1].Start) {
			return fmt.Sprintf("its operation %d (%s) ended %s before operation %d, recorded ahead of it, started",
				k, describeOp(ops[k]), ops[k-1].Start.Sub(ops[k].End).Round(time.Millisecond), k-1)
		}
	}
	return ""
}

// Behaviour is what some replays of an invocation did.
type Behaviour struct {
	Times int `json:"times"`
	// What says what the replay concluded: where it diverged and with
	// which error, or what it derived.
	What string `json:"what"`
	// Divergence is the replay's divergence, with the event it names.
	Divergence *Divergence `json:"divergence,omitempty"`
	// Deviation is where it left its record, if it did.
	Deviation *Deviation `json:"deviation,omitempty"`
}

// Divergence is a replay's divergence and the event of its log it
// diverged at.
type Divergence struct {
	Kind  string `json:"kind"`
	Error string `json:"error"`
	// Index is the event's position in the log the invocation read; ID,
	// Type and CorrelationID the event's.
	Index         int           `json:"index"`
	ID            string        `json:"id,omitempty"`
	Type          eventlog.Type `json:"type,omitempty"`
	CorrelationID string        `json:"corr,omitempty"`
}

// Run replays every invocation of the run in, opts.Repeat times each,
// through the engine that ran it (the model, or in.Runtime for a devkit
// run) against a read-only world that serves each the pages it read, and
// reports whether each did again what it recorded. A run that cannot be
// replayed returns an *UnreplayableError.
func Run(ctx context.Context, in Input, opts Options) (Report, error) {
	if err := Check(in); err != nil {
		return Report{}, err
	}
	repeat := max(opts.Repeat, 1)
	invs := invocations(in.Ops)
	if opts.Actors != nil {
		invs = slices.DeleteFunc(invs, func(inv invocation) bool { return !slices.Contains(opts.Actors, inv.actor) })
	}
	final := finalByID(in.Final)
	reads := servedReads(in, invs)
	if in.Runtime != nil {
		// Refuse, before replaying anything, a run whose record the
		// runtime's replay world cannot serve.
		for _, inv := range invs {
			if _, _, err := runtimeScript(in, inv, reads, final); err != nil {
				return Report{}, err
			}
		}
	}
	results := make([][]attempt, len(invs))
	var (
		mu   sync.Mutex
		done int
	)
	total := len(invs) * repeat
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, inv := range invs {
		results[i] = make([]attempt, repeat)
		once := func(r int) error {
			if err := gctx.Err(); err != nil {
				return err
			}
			if in.Runtime != nil {
				a, err := replayRuntime(gctx, in, inv, reads, final)
				if err != nil {
					return err
				}
				results[i][r] = a
			} else {
				results[i][r] = replayOnce(gctx, in, inv, reads, final)
			}
			mu.Lock()
			done++
			if opts.Progress != nil {
				opts.Progress(done, total)
			}
			mu.Unlock()
			return nil
		}
		if in.Runtime != nil {
			// The published runtime's repetitions of one invocation run
			// one after another: its delivery sent twice at once to one
			// process (core 5.0 keeps in-process state by message and
			// step) is no delivery the storm made.
			g.Go(func() error {
				for r := range repeat {
					if err := once(r); err != nil {
						return err
					}
				}
				return nil
			})
			continue
		}
		for r := range repeat {
			g.Go(func() error { return once(r) })
		}
	}
	if err := g.Wait(); err != nil {
		return Report{}, fmt.Errorf("replay run %s: %w", in.RunID, err)
	}
	return report(in, invs, reads, final, results, repeat), nil
}

// finalByID indexes a final log by event id (the first of a duplicate).
func finalByID(evs []eventlog.Event) map[string]eventlog.Event {
	final := map[string]eventlog.Event{}
	for _, e := range evs {
		if _, dup := final[e.ID]; !dup && e.ID != "" {
			final[e.ID] = e
		}
	}
	return final
}

// read is a page served: the events a list op returned, and whether they
// are exactly those (Input.Reads).
type read struct {
	events []eventlog.Event
	exact  bool
}

// servedReads rebuilds, once, every page the invocations read, by index
// into in.Ops.
func servedReads(in Input, invs []invocation) map[int]read {
	out := map[int]read{}
	for _, inv := range invs {
		for _, i := range inv.ops {
			if in.Ops[i].Kind == history.OpList {
				evs, ok := in.Reads(i)
				out[i] = read{events: evs, exact: ok}
			}
		}
	}
	return out
}

// attempt is what one replay of one invocation did: its behaviour, and
// how many of its replays diverged.
type attempt struct {
	b        Behaviour
	diverged int
}

// replayOnce re-executes invocation inv once: a detached model engine
// over a world that serves its recorded operations, delivered as the
// recorded one was as far as the record tells (at the recovery budget when
// it wrote a run_failed, else a plain delivery).
func replayOnce(ctx context.Context, in Input, inv invocation, reads map[int]read, final map[string]eventlog.Event) attempt {
	w := &world{runID: in.RunID, pages: map[int][]eventlog.Event{}, final: final}
	pageSize := 0
	for k, i := range inv.ops {
		op := in.Ops[i]
		w.ops = append(w.ops, op)
		if op.Kind == history.OpList {
			if pageSize == 0 {
				pageSize = op.Limit
			}
			w.pages[k] = reads[i].events
		}
	}
	w.now = w.ops[0].Start
	cfg := engine.Config{World: w, Program: in.Program, Knobs: in.Knobs, PageSize: pageSize, Detached: true, Now: w.Now}.Defaults()
	d := engine.Delivery{}
	if wroteFailure(w.ops) {
		d.Recovery = cfg.MaxRecoveries
	}
	rt := engine.New(ctx, cfg)
	outs := rt.Invoke(ctx, in.RunID, d)
	rt.Close()
	w.end()
	a := attempt{b: behaviour(outs, w.read, w.dev)}
	for _, o := range outs {
		if o.Divergence != nil {
			a.diverged++
		}
	}
	return a
}

// wroteFailure says a recorded invocation wrote a run_failed.
func wroteFailure(ops []history.Op) bool {
	return slices.ContainsFunc(ops, func(op history.Op) bool {
		return slices.ContainsFunc(op.Wrote, func(e history.OpEvent) bool { return e.Type == eventlog.RunFailed })
	})
}

// report aggregates the attempts.
func report(in Input, invs []invocation, reads map[int]read, final map[string]eventlog.Event, results [][]attempt, repeat int) Report {
	rep := Report{Run: in.RunID, Cell: in.Cell, Outcome: in.Outcome, Repeat: repeat, Divergences: DivergenceCount{Recorded: in.Divergences, Unknown: in.DivergencesUnknown}}
	var failing []int
	for i, inv := range invs {
		ir := Invocation{Actor: inv.actor, Ops: len(inv.ops), Exact: true}
		var ops []history.Op
		for _, k := range inv.ops {
			op := in.Ops[k]
			ops = append(ops, op)
			if op.Kind == history.OpList {
				ir.Pages++
				if !reads[k].exact {
					ir.Exact = false
				}
			}
		}
		ir.Recorded, ir.Failed = recordedWrites(ops), wroteFailure(ops)
		ir.Unordered = unordered(ops)
		if ir.Failed {
			failing = append(failing, i)
			if rep.Recorded == nil {
				rep.Recorded = &Recorded{Error: failureText(ops, final, in.Detail)}
			}
			rep.Recorded.By = append(rep.Recorded.By, inv.actor)
		}
		cut := 0
		byWhat := map[string]int{}
		for _, a := range results[i] {
			b := a.b
			// A failing invocation reproduced only when it raised the
			// recorded error again, not merely wrote what it recorded.
			sameFailure := !ir.Failed || (b.Divergence != nil && b.Divergence.Error == rep.Recorded.Error)
			switch {
			case b.Deviation == nil && sameFailure:
				ir.Reproduced++
			case b.Deviation != nil && b.Deviation.cut():
				cut++
			}
			if j, ok := byWhat[b.key()]; ok {
				ir.Behaviours[j].Times++
				continue
			}
			byWhat[b.key()] = len(ir.Behaviours)
			ir.Behaviours = append(ir.Behaviours, b)
		}
		slices.SortStableFunc(ir.Behaviours, func(a, b Behaviour) int { return b.Times - a.Times })
		ir.Verdict = verdict(ir.Reproduced, cut, repeat)
		if len(ir.Behaviours) > 1 {
			rep.Varied = append(rep.Varied, inv.actor)
		}
		rep.Divergences.Replayed += results[i][0].diverged
		rep.Invocations = append(rep.Invocations, ir)
	}
	if len(failing) > 0 {
		for r := range repeat {
			if !slices.ContainsFunc(failing, func(i int) bool { return results[i][r].b.Deviation != nil }) {
				rep.Reproduced++
			}
		}
		rep.Verdict = verdict(rep.Reproduced, 0, repeat)
	}
	rep.Summary = summary(rep)
	return rep
}

// verdict names how often n of repeat replays reproduced, cut of them
// having gone on past their record.
func verdict(n, cut, repeat int) string {
	switch {
	case n == repeat:
		return Every
	case cut == repeat:
		return Cut
	case n == 0:
		return Never
	}
	return Sometimes
}

// key identifies a behaviour among an invocation's replays.
func (b Behaviour) key() string {
	k := b.What
	if b.Deviation != nil {
		k += "\x00" + b.Deviation.String()
	}
	return k
}

// behaviour describes what one replay concluded from outs, having read
// the events read and left its record at dev (nil: it did not).
func behaviour(outs []engine.Outcome, read []eventlog.Event, dev *Deviation) Behaviour {
	b := Behaviour{Times: 1, Deviation: dev}
	var parts []string
	for _, o := range outs {
		switch {
		case o.Divergence != nil:
			d := &Divergence{Kind: o.Divergence.Kind, Error: o.Divergence.Error(), Index: o.Divergence.Index}
			if o.Divergence.Index >= 0 && o.Divergence.Index < len(read) {
				e := read[o.Divergence.Index]
				d.ID, d.Type, d.CorrelationID = e.ID, e.Type, e.CorrelationID
			}
			b.Divergence = d
			parts = append(parts, fmt.Sprintf("diverged at event %d (%s): %s", d.Index, strings.TrimSpace(string(d.Type)+" "+d.ID), d.Error))
		case o.Terminal != nil:
			parts = append(parts, "found the run ended ("+string(o.Terminal.Type)+")")
		case len(o.Decisions) == 0:
			parts = append(parts, "derived nothing new")
		default:
			parts = append(parts, "derived "+decisions(o.Decisions))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "did not replay (its load failed)")
	}
	b.What = strings.Join(parts, "; then ")
	return b
}

// decisions names derived decisions: "step_created step_… (finalize), …".
func decisions(ds []eventlog.Draft) string {
	var parts []string
	for _, d := range ds {
		s := strings.TrimSpace(string(d.Type) + " " + d.CorrelationID)
		if d.Type == eventlog.StepCreated {
			var p struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(d.Payload, &p) == nil && p.Name != "" {
				s += " (" + p.Name + ")"
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// recordedWrites says what a recorded invocation wrote, in a few words.
func recordedWrites(ops []history.Op) string {
	var ds []eventlog.Draft
	failed := 0
	for _, op := range ops {
		if op.Kind != history.OpAppend && op.Kind != history.OpAppendFenced {
			continue
		}
		for _, e := range op.Wrote {
			if e.Type == eventlog.RunFailed {
				failed++
			}
			ds = append(ds, eventlog.Draft{Type: e.Type, CorrelationID: e.CorrelationID})
		}
	}
	switch {
	case len(ds) == 0:
		return "nothing"
	case failed == len(ds):
		return "run_failed"
	}
	return fmt.Sprintf("%d events: %s", len(ds), decisions(ds))
}

// failureText is the error the run_failed a recorded invocation wrote
// carries (from the final log), or detail when the final log lacks it.
func failureText(ops []history.Op, final map[string]eventlog.Event, detail string) string {
	for _, op := range ops {
		for _, w := range op.Wrote {
			if w.Type != eventlog.RunFailed {
				continue
			}
			if e, ok := final[w.ID]; ok {
				if m := engine.Failure(e).Message; m != "" {
					return m
				}
			}
		}
	}
	return detail
}

// summary is the report in one line.
func summary(r Report) string {
	if r.Recorded == nil {
		every := 0
		for _, inv := range r.Invocations {
			if inv.Verdict == Every {
				every++
			}
		}
		return fmt.Sprintf("run %s wrote no run_failed (outcome %s): %d of %d invocations did again what they recorded in %s",
			r.Run, r.Outcome, every, len(r.Invocations), replays(r.Repeat)) + variedNote(r)
	}
	// The published runtime's errors end with "Learn more" lines: the
	// summary is one line, the JSON report keeps them.
	by, msg := strings.Join(r.Recorded.By, ", "), firstLine(r.Recorded.Error)
	switch r.Verdict {
	case Every:
		return fmt.Sprintf("the recorded divergence (%s: %s) reproduced %d of %d times from the recorded reads", by, msg, r.Reproduced, r.Repeat) + variedNote(r)
	case Sometimes:
		return fmt.Sprintf("the recorded divergence (%s: %s) reproduced %d of %d times from the same reads", by, msg, r.Reproduced, r.Repeat) + variedNote(r)
	}
	return fmt.Sprintf("the recorded divergence (%s: %s) never reproduced in %d replays: %s", by, msg, r.Repeat, neverWhy(r)) + variedNote(r)
}

// replays says "its one replay" or "every one of N replays".
func replays(n int) string {
	if n == 1 {
		return "its one replay"
	}
	return fmt.Sprintf("every one of %d replays", n)
}

// variedNote names the invocations whose replays varied, and where.
func variedNote(r Report) string {
	if len(r.Varied) == 0 {
		return ""
	}
	var first *Invocation
	for i := range r.Invocations {
		if r.Invocations[i].Actor == r.Varied[0] {
			first = &r.Invocations[i]
		}
	}
	var ways []string
	for _, b := range first.Behaviours {
		ways = append(ways, fmt.Sprintf("%dx %s", b.Times, b.What))
	}
	return fmt.Sprintf("; %d invocations varied from the same reads (%s), so the nondeterminism is inside the engine, not in the log: %s %s",
		len(r.Varied), strings.Join(r.Varied, ", "), first.Actor, strings.Join(ways, " | "))
}

// neverWhy says what the failing invocations' replays did instead.
func neverWhy(r Report) string {
	for _, inv := range r.Invocations {
		if !inv.Failed || inv.Reproduced > 0 {
			continue
		}
		b := inv.Behaviours[0]
		s := inv.Actor + "'s replay " + b.What
		if b.Deviation != nil {
			s += " and " + b.Deviation.String()
		}
		if !inv.Exact {
			s += " (its pages could not all be rebuilt exactly: the reads served may not be those it read)"
		}
		return s
	}
	return "unknown"
}
