package shrink

import (
	"context"
	"errors"
	"fmt"
	"github.com/stormctl/stormctl/internal/tools/ddmin"
	"maps"
	"slices"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/tools/replay"
	"github.com/stormctl/stormctl/internal/tools/schedule"
)

// DefaultBudget bounds a shrink that sets none.
const DefaultBudget = 50 * time.Second

// Options say how long to shrink and whom to tell.
type Options struct {
	// Budget bounds the shrinking (DefaultBudget when zero): when it runs
	// out the smallest failing schedule found so far is the result, said
	// not to be minimal.
	Budget time.Duration
	// Progress, when set, is told after every candidate checked.
	Progress func(Progress)
}

// Progress is how far a shrink has come.
type Progress struct {
	// Phase is what is being removed: "invocations", "events", "reads"
	// or "read events".
	Phase string
	// Tests counts the candidates checked so far; Left the elements the
	// phase keeps so far.
	Tests, Left int
}

// Size is how big a schedule is.
type Size struct {
	// Invocations take part (read or write); Events are in its final log;
	// Reads are its invocations' pages.
	Invocations int `json:"invocations"`
	Events      int `json:"events"`
	Reads       int `json:"reads"`
}

// Result is a shrunk run.
type Result struct {
	Run string `json:"run"`
	// Failing is the invocation whose replay diverges, and Error what the
	// engine raises: the run's recorded divergence.
	Failing string `json:"failing"`
	Error   string `json:"error"`
	// Before is the recorded schedule's size, After the minimal one's.
	Before Size `json:"before"`
	After  Size `json:"after"`
	// Tests counts the candidates checked, each by a replay; Elapsed is
	// how long it took.
	Tests   int           `json:"tests"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Minimal says every phase ran to its end: removing any one element
	// the last phase handled loses the divergence. False when the budget
	// ran out first.
	Minimal bool `json:"minimal"`
	// Schedule is the minimal schedule, Text its text.
	Schedule *schedule.Schedule `json:"-"`
	Text     string             `json:"schedule"`
	// Narrative tells the minimal schedule, a step a line.
	Narrative []string `json:"narrative"`
}

// A run that cannot be replayed cannot be shrunk: Shrink returns
// replay's *UnreplayableError for it.

// ErrNotReproduced is a recorded schedule whose failing invocation does
// not diverge the recorded way when it is executed again.
var ErrNotReproduced = errors.New("the recorded schedule does not reproduce its divergence")

// Shrink finds a minimal schedule of run in that still makes its failing
// invocation's replay raise the recorded error: delta debugging over
// which invocations take part, which events exist, which reads each
// invocation makes and which events each read shows, each candidate
// executed (its writes re-derived from their reads) and checked by a
// replay of the failing invocation.
func Shrink(ctx context.Context, in Input, opts Options) (Result, error) {
	started := time.Now()
	if builtinengines.Traits(in.Engine).Published {
		return Result{}, &UnshrinkableError{RunID: in.RunID, Reason: "it ran on the devkit engine, and shrink executes its candidates through the model only, for now (stormctl replay re-executes the run through the published runtime)"}
	}
	if err := replay.Check(in.Input); err != nil {
		return Result{}, err
	}
	rec, err := fromRecord(in)
	if err != nil {
		return Result{}, err
	}
	budget := opts.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	// The recorded schedule is checked on the caller's context; the
	// search runs within the budget.
	c := &checker{ctx: ctx, in: in, failing: rec.failing, target: rec.sched.Detail, progress: opts.Progress, memo: &schedule.Memo{}}
	res := Result{Run: in.RunID, Failing: rec.failing, Error: rec.sched.Detail}
	cur := rec.sched
	if res.Before, err = c.size(cur); err != nil {
		return res, fmt.Errorf("execute the recorded schedule of run %s: %w", in.RunID, err)
	}
	if !c.fails(cur) {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		return res, fmt.Errorf("run %s: %w: %s", in.RunID, ErrNotReproduced, c.last)
	}
	// good is the smallest schedule found whose text executes strictly
	// and raises the target error: the recorded one to begin with.
	good := cur
	if err := c.strictly(good); err != nil {
		return res, fmt.Errorf("run %s: the recorded schedule's text: %w", in.RunID, err)
	}
	c.ctx = bctx
	// keep makes the schedule found so far good, when its text (each
	// write's labels by position) still fails executed strictly. The
	// search itself goes on with cur, whose writes commit their decisions
	// by key wherever their writers derive them.
	current := false // good is cur's text
	keep := func() {
		if bctx.Err() != nil {
			// Past the budget, these checks run on the caller's
			// context; the search stays stopped.
			c.ctx = ctx
			defer func() { c.ctx = bctx }()
		}
		n := normalize(cur, c.in.Program)
		if n != nil && n.Format() != good.Format() && c.fails(n) && c.strictly(n) == nil {
			good = n
		}
		current = n != nil && n.Format() == good.Format()
	}
	// First what the failing invocation reads, then only what that needs
	// (the cone), then the rest, element by element, until a round
	// removes nothing.
	for {
		before := cur.Format()
		cur = c.failingReads(cur)
		if cone := c.cone(cur); cone != nil && c.fails(cone) {
			cur = cone
		}
		for _, ph := range []struct {
			name string
			by   func(*schedule.Schedule) (int, func([]int) *schedule.Schedule)
		}{{"invocations", c.byInvocation}, {"events", c.byEvent}, {"reads", c.byRead}} {
			keep()
			cur = c.phase(cur, ph.name, ph.by)
		}
		keep()
		for i, it := range cur.Items {
			if it.Kind == schedule.KindList && it.Actor != c.failing && len(it.Labels) > 0 {
				cur = c.phase(cur, "read events", c.byReadEvent(func(j int, _ schedule.Item) bool { return j == i }))
			}
		}
		keep()
		if bctx.Err() != nil || cur.Format() == before {
			break
		}
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	minimal := bctx.Err() == nil && current
	cur = good
	res.Minimal = minimal
	res.Tests, res.Elapsed = c.tests, time.Since(started)
	if res.After, err = c.size(cur); err != nil {
		return res, fmt.Errorf("execute the minimal schedule of run %s: %w", in.RunID, err)
	}
	res.Schedule, res.Text = cur, cur.Format()
	res.Narrative = narrative(cur, in.Program, rec.failing, rec.sched.Detail)
	return res, nil
}

// checker runs candidates.
type checker struct {
	ctx      context.Context
	in       Input
	failing  string
	target   string
	tests    int
	progress func(Progress)
	phaseNow string
	left     int
	// last says what the last candidate's failing invocation did.
	last string
	// memo keeps what each view derived across candidates.
	memo *schedule.Memo
}

// fails executes candidate s leniently and replays its failing
// invocation: it fails when that replay raises the target error.
func (c *checker) fails(s *schedule.Schedule) bool {
	run, err := s.Execute(schedule.Options{Program: c.in.Program, Lenient: true, Memo: c.memo})
	if err != nil {
		c.last = err.Error()
		return false
	}
	return c.diverges(run)
}

// strictly checks that s's text, parsed and executed strictly (as
// Reproduce does), makes the failing invocation raise the target error.
func (c *checker) strictly(s *schedule.Schedule) error {
	parsed, err := schedule.Parse(s.Format())
	if err != nil {
		return err
	}
	run, err := parsed.Execute(schedule.Options{Program: c.in.Program})
	if err != nil {
		return err
	}
	d, err := divergence(context.WithoutCancel(c.ctx), run, c.in.Program, c.failing)
	switch {
	case err != nil:
		return err
	case d == nil:
		return fmt.Errorf("%w: %s's replay does not diverge", ErrNotReproduced, c.failing)
	case d.Error != c.target:
		return fmt.Errorf("%w: %s's replay raises %s", ErrNotReproduced, c.failing, d.Error)
	}
	return nil
}

// diverges replays the failing invocation of an executed candidate: true
// when it raises the target error. It counts a candidate checked.
func (c *checker) diverges(run *schedule.Run) bool {
	c.tests++
	defer func() {
		if c.progress != nil {
			c.progress(Progress{Phase: c.phaseNow, Tests: c.tests, Left: c.left})
		}
	}()
	d, err := divergence(c.ctx, run, c.in.Program, c.failing)
	switch {
	case err != nil:
		c.last = err.Error()
		return false
	case d == nil:
		c.last = c.failing + "'s replay did not diverge"
		return false
	}
	c.last = c.failing + "'s replay raised: " + d.Error
	return d.Error == c.target
}

// divergence replays actor's invocation of an executed schedule once and
// returns what it raised (nil: it did not diverge).
func divergence(ctx context.Context, run *schedule.Run, prog engine.Program, actor string) (*replay.Divergence, error) {
	rep, err := replay.Run(ctx, replay.Input{RunID: run.RunID, Outcome: run.Outcome, Detail: run.Detail, Knobs: run.Knobs, Program: prog,
		Ops: run.Ops, Final: run.Final, Reads: func(i int) ([]eventlog.Event, bool) { evs, ok := run.Pages[i]; return evs, ok }},
		replay.Options{Repeat: 1, Actors: []string{actor}})
	if err != nil {
		return nil, err
	}
	if len(rep.Invocations) != 1 {
		return nil, fmt.Errorf("%s does not read in the schedule", actor)
	}
	return rep.Invocations[0].Behaviours[0].Divergence, nil
}

// size executes s leniently and measures it.
func (c *checker) size(s *schedule.Schedule) (Size, error) {
	run, err := s.Execute(schedule.Options{Program: c.in.Program, Lenient: true})
	if err != nil {
		return Size{}, err
	}
	actors := map[string]bool{}
	z := Size{Events: len(run.Final)}
	for _, op := range run.Ops {
		if engine.IsInvocation(op.Actor) {
			actors[op.Actor] = true
		}
	}
	for _, it := range s.Items {
		if it.Kind == schedule.KindList {
			z.Reads++
		}
	}
	z.Invocations = len(actors)
	return z, nil
}

// phase runs one phase of delta debugging: elements lists the phase's
// elements of s and build makes the candidate keeping some of them.
func (c *checker) phase(s *schedule.Schedule, name string, by func(*schedule.Schedule) (int, func(keep []int) *schedule.Schedule)) *schedule.Schedule {
	n, build := by(s)
	if n == 0 || c.ctx.Err() != nil {
		return s
	}
	return c.minimize(s, name, n, build, c.fails)
}

// minimize runs delta debugging over the n elements of a phase: build
// makes the candidate keeping some, fails checks it.
func (c *checker) minimize(s *schedule.Schedule, name string, n int, build func([]int) *schedule.Schedule, fails func(*schedule.Schedule) bool) *schedule.Schedule {
	c.phaseNow, c.left = name, n
	keep := ddmin.Min(c.ctx, n, func(keep []int) bool {
		ok := fails(build(keep))
		if ok {
			c.left = len(keep)
		}
		return ok
	})
	if len(keep) == n {
		return s
	}
	return build(keep)
}

// byInvocation: the elements are the invocations other than the failing
// one; a candidate keeps every item of the kept ones (and of the failing
// one, and every fact of a step worker or hook sender).
func (c *checker) byInvocation(s *schedule.Schedule) (int, func([]int) *schedule.Schedule) {
	var actors []string
	for _, it := range s.Items {
		if engine.IsInvocation(it.Actor) && it.Actor != c.failing && !slices.Contains(actors, it.Actor) {
			actors = append(actors, it.Actor)
		}
	}
	return len(actors), func(keep []int) *schedule.Schedule {
		kept := map[string]bool{c.failing: true}
		for _, k := range keep {
			kept[actors[k]] = true
		}
		return s.Filter(func(it schedule.Item) (schedule.Item, bool) {
			return it, !engine.IsInvocation(it.Actor) || kept[it.Actor]
		})
	}
}

// byEvent: the elements are the events written, but the failing
// invocation's run_failed; a candidate writes only the kept ones (a
// write's other decisions derived and not committed) and no read shows
// the others.
func (c *checker) byEvent(s *schedule.Schedule) (int, func([]int) *schedule.Schedule) {
	var labels []string
	for _, it := range s.Items {
		if it.Kind == schedule.KindFail && it.Actor == c.failing {
			continue
		}
		labels = append(labels, written(it)...)
	}
	return len(labels), func(keep []int) *schedule.Schedule {
		kept := map[string]bool{}
		for _, k := range keep {
			kept[labels[k]] = true
		}
		return s.Filter(func(it schedule.Item) (schedule.Item, bool) {
			switch it.Kind {
			case schedule.KindStart, schedule.KindFact:
				return it, kept[it.Label]
			case schedule.KindFail:
				return it, it.Actor == c.failing || kept[it.Label]
			case schedule.KindWrite:
				it.Labels = mapLabels(it.Labels, func(l string) string {
					if kept[l] {
						return l
					}
					return schedule.Skip
				})
			case schedule.KindList:
				it.Labels = slices.DeleteFunc(slices.Clone(it.Labels), func(l string) bool { return !kept[l] })
			}
			return it, true
		})
	}
}

// byRead: the elements are the reads (list items) of the invocations but
// the failing one; a candidate makes only the kept ones.
func (c *checker) byRead(s *schedule.Schedule) (int, func([]int) *schedule.Schedule) {
	var reads []int
	for i, it := range s.Items {
		if it.Kind == schedule.KindList && it.Actor != c.failing {
			reads = append(reads, i)
		}
	}
	return len(reads), func(keep []int) *schedule.Schedule {
		kept := map[int]bool{}
		for _, k := range keep {
			kept[reads[k]] = true
		}
		out := *s
		out.Items = nil
		for i, it := range s.Items {
			if it.Kind != schedule.KindList || it.Actor == c.failing || kept[i] {
				out.Items = append(out.Items, it)
			}
		}
		return &out
	}
}

// byReadEvent: the elements are the events the reads only picks (by
// item index) show; a candidate shows only the kept ones in those reads.
// The items stay where they are.
func (c *checker) byReadEvent(only func(int, schedule.Item) bool) func(*schedule.Schedule) (int, func([]int) *schedule.Schedule) {
	return func(s *schedule.Schedule) (int, func([]int) *schedule.Schedule) {
		type shown struct{ item, at int }
		var all []shown
		for i, it := range s.Items {
			if it.Kind == schedule.KindList && only(i, it) {
				for j := range it.Labels {
					all = append(all, shown{i, j})
				}
			}
		}
		return len(all), func(keep []int) *schedule.Schedule {
			kept := map[shown]bool{}
			for _, k := range keep {
				kept[all[k]] = true
			}
			return s.FilterIndexed(func(i int, it schedule.Item) (schedule.Item, bool) {
				if it.Kind != schedule.KindList || !only(i, it) {
					return it, true
				}
				var ls []string
				for j, l := range it.Labels {
					if kept[shown{i, j}] {
						ls = append(ls, l)
					}
				}
				it.Labels = ls
				return it, true
			})
		}
	}
}

// failingReads shrinks what the failing invocation's reads show. Nothing
// else depends on them (the invocation writes the run_failed only), so
// the schedule is executed once and each candidate is the same run with
// the failing invocation's pages cut, replayed.
func (c *checker) failingReads(s *schedule.Schedule) *schedule.Schedule {
	only := func(_ int, it schedule.Item) bool { return it.Actor == c.failing }
	n, build := c.byReadEvent(only)(s)
	if n == 0 || c.ctx.Err() != nil {
		return s
	}
	run, err := s.Execute(schedule.Options{Program: c.in.Program, Lenient: true, Memo: c.memo})
	if err != nil {
		return s
	}
	// The failing invocation's list items and list ops, in order.
	var items, ops []int
	for i, it := range s.Items {
		if it.Kind == schedule.KindList && it.Actor == c.failing {
			items = append(items, i)
		}
	}
	for i, op := range run.Ops {
		if op.Kind == history.OpList && op.Actor == c.failing {
			ops = append(ops, i)
		}
	}
	if len(items) != len(ops) {
		return s
	}
	return c.minimize(s, "failing reads", n, build, func(cand *schedule.Schedule) bool {
		pages := maps.Clone(run.Pages)
		for k, i := range items {
			shown := map[string]bool{}
			for _, l := range cand.Items[i].Labels {
				shown[l] = true
			}
			pages[ops[k]] = slices.DeleteFunc(slices.Clone(run.Pages[ops[k]]), func(e eventlog.Event) bool { return !shown[e.ID] })
		}
		cut := *run
		cut.Pages = pages
		return c.diverges(&cut)
	})
}

// cone keeps of s only what the failing invocation's reads need: the
// items that write what it reads, every item of the invocations among
// their writers (what those read is needed in turn), and the creations
// of the operations of the facts needed. Nil when it keeps everything.
func (c *checker) cone(s *schedule.Schedule) *schedule.Schedule {
	writer := map[string]int{}
	for i, it := range s.Items {
		for _, l := range written(it) {
			writer[l] = i
		}
	}
	actors := map[string]bool{c.failing: true}
	needed := map[string]bool{}
	var queue []string
	need := func(ls ...string) {
		for _, l := range ls {
			if l != "" && !needed[l] {
				needed[l] = true
				queue = append(queue, l)
			}
		}
	}
	reads := func(actor string) {
		for _, it := range s.Items {
			if it.Actor == actor && it.Kind == schedule.KindList {
				need(it.Labels...)
			}
		}
	}
	reads(c.failing)
	for len(queue) > 0 {
		l := queue[0]
		queue = queue[1:]
		i, ok := writer[l]
		if !ok {
			continue
		}
		it := s.Items[i]
		need(it.Of)
		if engine.IsInvocation(it.Actor) && !actors[it.Actor] {
			actors[it.Actor] = true
			reads(it.Actor)
		}
	}
	out := s.Filter(func(it schedule.Item) (schedule.Item, bool) {
		if engine.IsInvocation(it.Actor) {
			return it, actors[it.Actor]
		}
		return it, needed[it.Label]
	})
	if len(out.Items) == len(s.Items) {
		return nil
	}
	return out
}

// positional rewrites a write whose labels commit decisions by key as one
// whose labels commit them by position in derived (the decisions its
// writer derives), keeping the labels keep says: a "-" for every other
// decision, none past the last kept. It drops a write left with none.
func positional(it schedule.Item, derived []eventlog.Draft, keep func(string) bool) (schedule.Item, bool) {
	labels := make([]string, len(derived))
	commit := make([]int, len(derived))
	for i := range labels {
		labels[i], commit[i] = schedule.Skip, 1
	}
	d := it.Commit
	for i, l := range it.Labels {
		if l == schedule.Skip || !keep(l) {
			continue
		}
		k := i
		if i < len(it.Keys) {
			k = slices.IndexFunc(derived, func(x eventlog.Draft) bool { return schedule.DecisionKey(x.Type, x.CorrelationID) == it.Keys[i] })
		}
		if k < 0 || k >= len(labels) {
			continue
		}
		labels[k] = l
		if len(d) > 0 {
			commit[k] = d[min(i, len(d)-1)]
		}
	}
	n := len(labels)
	for n > 0 && labels[n-1] == schedule.Skip {
		n--
	}
	// A decision not committed takes the delay of the next one that is,
	// so that one delay for all is written as one.
	for i := n - 2; i >= 0; i-- {
		if labels[i] == schedule.Skip {
			commit[i] = commit[i+1]
		}
	}
	commit = commit[:n]
	if n > 0 && !slices.ContainsFunc(commit, func(d int) bool { return d != commit[0] }) {
		commit = commit[:1]
	}
	it.Labels, it.Commit, it.Keys = labels[:n], commit, nil
	return it, n > 0
}

// mapLabels applies f to each label.
func mapLabels(ls []string, f func(string) string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = f(l)
	}
	return out
}

// normalize drops what a lenient execution of s did not commit or read:
// labels of writes not committed become "-" (trailing ones dropped, and
// writes committing nothing), reads show only committed events, facts and
// reads nobody needs go. The result executes strictly; nil when s does
// not execute.
func normalize(s *schedule.Schedule, prog engine.Program) *schedule.Schedule {
	run, err := s.Execute(schedule.Options{Program: prog, Lenient: true})
	if err != nil {
		return nil
	}
	committed := map[string]bool{}
	for _, e := range run.Final {
		committed[e.ID] = true
	}
	read := map[string]bool{}
	for _, it := range s.Items {
		if it.Kind == schedule.KindList {
			for _, l := range it.Labels {
				if committed[l] {
					read[l] = true
				}
			}
		}
	}
	// A fact read needs its operation's creation.
	for _, it := range s.Items {
		if it.Kind == schedule.KindFact && read[it.Label] {
			read[it.Of] = true
		}
	}
	out := s.FilterIndexed(func(i int, it schedule.Item) (schedule.Item, bool) {
		switch it.Kind {
		case schedule.KindStart, schedule.KindFail:
			return it, committed[it.Label]
		case schedule.KindFact:
			return it, committed[it.Label] && read[it.Label]
		case schedule.KindWrite:
			return positional(it, run.Derived[i], func(l string) bool { return committed[l] && read[l] })
		case schedule.KindList:
			it.Labels = slices.DeleteFunc(slices.Clone(it.Labels), func(l string) bool { return !committed[l] })
		}
		return it, true
	})
	// An invocation that writes nothing any more changes nothing by its
	// reads, unless it is the one whose replay diverges (it writes the
	// run_failed).
	writes := map[string]bool{}
	for _, it := range out.Items {
		if it.Kind != schedule.KindList && it.Kind != schedule.KindListErr {
			writes[it.Actor] = true
		}
	}
	return out.Filter(func(it schedule.Item) (schedule.Item, bool) { return it, writes[it.Actor] })
}
