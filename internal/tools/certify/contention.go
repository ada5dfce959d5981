package certify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/oklog/ulid/v2"
	"golang.org/x/sync/errgroup"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/base/plural"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// Load is the contention checks' load.
type Load struct {
	// Writers write at once: for the same creation (uniqueness), or each
	// its own events (reads); Readers read while they do.
	Writers, Readers int
	// Rounds is how many runs each check writes, a fresh one a round.
	Rounds int
	// Creations is how many entities each uniqueness round creates, each
	// by every writer at once; Events how many events each writer writes
	// in a reads round.
	Creations, Events int
	// PageSize is the readers' page size (small: many cursors per read).
	PageSize int
}

// DefaultLoad is certify's load: sized for a 2-core machine, a few
// seconds a check on the local packages.
func DefaultLoad() Load {
	return Load{Writers: 8, Readers: 4, Rounds: 3, Creations: 8, Events: 10, PageSize: 7}
}

// The contention checks' names, in the card's order.
const (
	CheckUnique    = "unique creations per correlation id"
	CheckDensity   = "density"
	CheckPrefix    = "prefix reads"
	CheckResume    = "cursor resumption"
	CheckCommit    = "commit order vs id order"
	CheckIdemKeys  = "idempotency keys"
	maxResumeReads = 24 // resumptions checked per round, spread over its reads
)

// Contend runs the contention checks on fresh worlds of entry (one per
// check, closed at its end) and returns a Result per check.
func Contend(ctx context.Context, entry worlds.Entry, load Load, progress io.Writer) []Result {
	var out []Result
	say := func(rs ...Result) {
		for _, r := range rs {
			if progress != nil {
				fmt.Fprintf(progress, "certify: contention %s: %s\n", r.Name, r.Verdict)
			}
			out = append(out, r)
		}
	}
	say(Decide(Contention, CheckUnique, withWorld(ctx, entry, func(w worlds.World) Evidence { return unique(ctx, w, load) })))
	say(reads(ctx, entry, load)...)
	idem := Evidence{Skip: "the contract has no idempotency keys of its own: a creation's uniqueness per correlation id is checked above"}
	if len(entry.Limits.Unkeyed) > 0 {
		var keys []string
		for k := range entry.Limits.Unkeyed {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		idem.Skip += fmt.Sprintf("; the package declares no key for %v (%s)", keys, entry.Limits.Unkeyed[keys[0]])
	}
	say(Decide(Contention, CheckIdemKeys, idem))
	return out
}

// withWorld opens a fresh world of entry for f and closes it after; a
// world that does not open is the check's error.
func withWorld(ctx context.Context, entry worlds.Entry, f func(worlds.World) Evidence) Evidence {
	dir, cleanup, err := tempDir()
	if err != nil {
		return Evidence{Err: err}
	}
	defer cleanup()
	w, err := entry.Open(ctx, worlds.Options{Dir: dir, Seed: 1})
	if err != nil {
		return Evidence{Err: fmt.Errorf("%w: open world %s: %v", ErrMachine, entry.Name, err)}
	}
	defer w.Close()
	return f(w)
}

// newRun creates a fresh run with its run_created on w.
func newRun(ctx context.Context, w worlds.World) (string, error) {
	id := "wrun_" + ulid.Make().String()
	if err := w.CreateRun(ctx, eventlog.Run{ID: id, Scheme: eventlog.SchemeULID}); err != nil {
		return "", fmt.Errorf("create run: %w", err)
	}
	if _, err := w.Append(ctx, id, []eventlog.Draft{draft(eventlog.RunCreated, "")}); err != nil {
		return "", fmt.Errorf("append run_created to %s: %w", id, err)
	}
	return id, nil
}

func draft(t eventlog.Type, corr string) eventlog.Draft {
	return eventlog.Draft{Type: t, CorrelationID: corr, Payload: json.RawMessage(fmt.Sprintf(`{"corr":%q}`, corr))}
}

// infra says whether a write's error is the store's or machine's
// unavailability (or the check's context ending), not an answer.
func infra(ctx context.Context, err error) bool {
	return errors.Is(err, eventlog.ErrUnavailable) || errors.Is(err, worlds.ErrPrerequisite) || ctx.Err() != nil
}

// creations are the event types that create an entity, each unique per
// correlation id in its run: a step, a wait, a hook.
var creations = []eventlog.Type{eventlog.StepCreated, eventlog.WaitCreated, eventlog.HookCreated}

// creation is the draft of a creation of type t with correlation id corr:
// a wait resumes far in the future, a hook's token is its correlation id.
func creation(t eventlog.Type, corr string) eventlog.Draft {
	d := draft(t, corr)
	switch t {
	case eventlog.WaitCreated:
		d.Payload = json.RawMessage(`{"resumeAt":"2100-01-01T00:00:00Z"}`)
	case eventlog.HookCreated:
		d.Token = corr
	}
	return d
}

// unique has load.Writers writers create each of load.Creations steps,
// waits and hooks of a run at once (step_created, wait_created,
// hook_created with the same correlation id), for load.Rounds runs, then
// reads each run's log: more than one creation of a type for a correlation
// id is a duplicate creation. A writer the store refuses (a conflict) is
// the contract at work. Evidence: the contended creations at least one
// writer got accepted.
func unique(ctx context.Context, w worlds.World, load Load) Evidence {
	var e Evidence
	e.Of = "contended creations of steps, waits and hooks (" + fmt.Sprint(load.Writers) + " writers each)"
	duplicated := map[eventlog.Type]int{} // correlation ids created more than once, per type
	refused := 0                          // writes the world refused (the contract at work)
	for round := range load.Rounds {
		run, err := newRun(ctx, w)
		if err != nil {
			return Evidence{Err: err, Of: e.Of, Observed: e.Observed}
		}
		type key struct {
			t    eventlog.Type
			corr string
		}
		var keys []key
		for _, t := range creations {
			for c := range load.Creations {
				keys = append(keys, key{t, fmt.Sprintf("%s_r%d_c%d", strings.TrimSuffix(string(t), "_created"), round, c)})
			}
		}
		accepted := map[key]int{}
		var mu sync.Mutex
		var infraErr error
		start := make(chan struct{})
		var g errgroup.Group
		for _, k := range keys {
			for range load.Writers {
				g.Go(func() error {
					<-start
					_, err := w.Append(ctx, run, []eventlog.Draft{creation(k.t, k.corr)})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						accepted[k]++
					case forensics.IsRefusalClass(eventlog.Classify(err)):
						refused++
					case infra(ctx, err) && infraErr == nil:
						infraErr = err
					}
					return nil
				})
			}
		}
		close(start)
		_ = g.Wait()
		if infraErr != nil {
			return Evidence{Err: fmt.Errorf("%w: %v", ErrMachine, infraErr), Of: e.Of, Observed: e.Observed}
		}
		log, err := listAll(ctx, w, run, eventlog.Cursor{}, 0)
		if err != nil {
			return Evidence{Err: err, Of: e.Of, Observed: e.Observed}
		}
		byKey := map[key][]string{}
		for _, ev := range log {
			k := key{ev.Type, ev.CorrelationID}
			byKey[k] = append(byKey[k], ev.ID)
		}
		for _, k := range keys {
			if len(byKey[k]) > 1 {
				duplicated[k.t]++
			}
			if ids := byKey[k]; len(ids) > 1 && e.Counterexample == "" {
				e.Counterexample = fmt.Sprintf("run %s, correlation id %s: %d %s events (%s and %s) of %d writers at once, %d of them accepted",
					run, k.corr, len(ids), k.t, ids[0], ids[1], load.Writers, accepted[k])
			}
			if accepted[k] > 0 {
				e.Observed++
			}
		}
	}
	if refused > 0 {
		// Not judged here: judging a refusal takes the published runtime's
		// replay of a run's log, which certify's storm section does.
		e.Also = fmt.Sprintf("%s refused (the package's own fence; certify does not judge them: its storm section's rejections are judged through the runtime, docs/engine-devkit.md#rejections-the-writes-a-world-refused)", plural.Count(refused, "contended write"))
	}
	if e.Counterexample != "" {
		var per []string
		for _, t := range creations {
			per = append(per, fmt.Sprintf("%s %d of %d", t, duplicated[t], load.Rounds*load.Creations))
		}
		e.Counterexample += " (created more than once: " + strings.Join(per, ", ") + ")"
	}
	return e
}

// listAll reads a run's log after cursor, page by page (pageSize 0: the
// world's own paging), checking that each page moves the cursor on.
func listAll(ctx context.Context, w worlds.World, run string, after eventlog.Cursor, pageSize int) ([]eventlog.Event, error) {
	var out []eventlog.Event
	if pageSize <= 0 {
		p, err := w.List(ctx, run, after, 0)
		if err != nil {
			return nil, fmt.Errorf("list run %s: %w", run, err)
		}
		return p.Events, nil
	}
	for {
		p, err := w.List(ctx, run, after, pageSize)
		if err != nil {
			return nil, fmt.Errorf("list run %s: %w", run, err)
		}
		out = append(out, p.Events...)
		if !p.More || len(p.Events) == 0 {
			return out, nil
		}
		if p.Next == after {
			return nil, fmt.Errorf("list run %s: a page of %d events did not move the cursor past %s", run, len(p.Events), after.ID)
		}
		after = p.Next
	}
}

// snapshot is one read a reader made while the writers wrote.
type snapshot struct {
	reader, n int
	ids       []string
}

// reads has load.Writers writers append load.Events events each to a run
// while load.Readers readers read its whole log, page by page, again and
// again, for load.Rounds runs; then it judges what they read: density,
// prefix reads, cursor resumption and, where the world has a commit
// clock, commit order against id order.
func reads(ctx context.Context, entry worlds.Entry, load Load) []Result {
	var density, prefix, resume, commit Evidence
	density.Of, prefix.Of, resume.Of, commit.Of = "accepted events read back", "pairs of successive reads compared while writes were in flight", "resumptions from a cursor taken while writes were in flight", "pairs of events ordered by commit time"
	ev := withWorld(ctx, entry, func(w worlds.World) Evidence {
		ct, hasClock := w.(worlds.CommitTimes)
		if !hasClock {
			commit.Skip = "the package's store has no commit clock stormctl can read"
			if entry.Limits.CommitClock != "" {
				commit.Skip = entry.Limits.CommitClock
			}
		}
		for round := range load.Rounds {
			if err := readRound(ctx, w, load, round, ct, &density, &prefix, &resume, &commit); err != nil {
				return Evidence{Err: err}
			}
		}
		return Evidence{}
	})
	for _, e := range []*Evidence{&density, &prefix, &resume, &commit} {
		if ev.Err != nil && e.Err == nil && e.Skip == "" {
			e.Err = ev.Err
		}
	}
	out := []Result{
		Decide(Contention, CheckDensity, density),
		Decide(Contention, CheckPrefix, prefix),
		Decide(Contention, CheckResume, resume),
		Decide(Contention, CheckCommit, commit),
	}
	if commit.Skip == "" && entry.Limits.CommitClock != "" && out[3].Verdict != Skip {
		out[3].Detail += " (clock: " + entry.Limits.CommitClock + ")"
	}
	return out
}

// readRound is one round of reads: one run, its writers and readers.
func readRound(ctx context.Context, w worlds.World, load Load, round int, ct worlds.CommitTimes, density, prefix, resume, commit *Evidence) error {
	run, err := newRun(ctx, w)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	accepted := map[string]bool{}
	var snaps []snapshot
	done := make(chan struct{})
	var writers, readers errgroup.Group
	for i := range load.Writers {
		writers.Go(func() error {
			for j := range load.Events {
				evs, err := w.Append(ctx, run, []eventlog.Draft{draft(eventlog.StepCreated, fmt.Sprintf("step_r%d_w%d_e%d", round, i, j))})
				if err != nil {
					if infra(ctx, err) {
						return fmt.Errorf("%w: %v", ErrMachine, err)
					}
					return fmt.Errorf("writer %d: the store refused a step_created of its own: %w", i, err)
				}
				mu.Lock()
				for _, e := range evs {
					accepted[e.ID] = true
				}
				mu.Unlock()
			}
			return nil
		})
	}
	for r := range load.Readers {
		readers.Go(func() error {
			for n := 0; ; n++ {
				select {
				case <-done:
					return nil
				default:
				}
				evs, err := listAll(ctx, w, run, eventlog.Cursor{}, load.PageSize)
				if err != nil {
					if infra(ctx, err) {
						return fmt.Errorf("%w: %v", ErrMachine, err)
					}
					return err
				}
				ids := make([]string, len(evs))
				for k, e := range evs {
					ids[k] = e.ID
				}
				mu.Lock()
				snaps = append(snaps, snapshot{reader: r, n: n, ids: ids})
				mu.Unlock()
			}
		})
	}
	werr := writers.Wait()
	close(done)
	rerr := readers.Wait()
	if err := errors.Join(werr, rerr); err != nil {
		return err
	}
	final, err := listAll(ctx, w, run, eventlog.Cursor{}, load.PageSize)
	if err != nil {
		return err
	}
	judgeDensity(run, final, accepted, snaps, density)
	judgePrefix(run, snaps, prefix)
	if err := judgeResume(ctx, w, run, final, snaps, load.PageSize, resume); err != nil {
		return err
	}
	if ct != nil {
		times, err := ct.CommitTimes(ctx, run)
		if err != nil {
			return fmt.Errorf("commit times of run %s: %w", run, err)
		}
		judgeCommit(run, times, commit)
	}
	return nil
}

// judgeDensity: the final read holds every accepted event once, and no
// read held an event twice.
func judgeDensity(run string, final []eventlog.Event, accepted map[string]bool, snaps []snapshot, e *Evidence) {
	seen := map[string]bool{}
	for _, ev := range final {
		if seen[ev.ID] && e.Counterexample == "" {
			e.Counterexample = fmt.Sprintf("run %s: the final read holds event %s twice", run, ev.ID)
		}
		seen[ev.ID] = true
	}
	ids := make([]string, 0, len(accepted))
	for id := range accepted {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if !seen[id] && e.Counterexample == "" {
			e.Counterexample = fmt.Sprintf("run %s: event %s was accepted but the final read (%d events) does not hold it", run, id, len(final))
		}
	}
	for _, s := range snaps {
		in := map[string]bool{}
		for _, id := range s.ids {
			if in[id] && e.Counterexample == "" {
				e.Counterexample = fmt.Sprintf("run %s: reader %d's read %d holds event %s twice", run, s.reader, s.n, id)
			}
			in[id] = true
		}
	}
	e.Observed += len(accepted)
}

// judgePrefix: each reader's read holds its previous read as a prefix: an
// event that appears before one the reader had already read is a late
// commit the reader could not have seen in order.
func judgePrefix(run string, snaps []snapshot, e *Evidence) {
	last := map[int]snapshot{}
	for _, s := range snaps { // in the order the reads ended, per reader
		prev, ok := last[s.reader]
		last[s.reader] = s
		if !ok {
			continue
		}
		e.Observed++
		for i, id := range prev.ids {
			if i >= len(s.ids) {
				if e.Counterexample == "" {
					e.Counterexample = fmt.Sprintf("run %s: reader %d's read %d holds %d events, fewer than its read %d (%d): event %s vanished",
						run, s.reader, s.n, len(s.ids), prev.n, len(prev.ids), id)
				}
				break
			}
			if s.ids[i] != id {
				if e.Counterexample == "" {
					e.Counterexample = fmt.Sprintf("run %s: reader %d's read %d holds event %s at position %d, before event %s that its read %d already held there: %s committed late, below the reader's position",
						run, s.reader, s.n, s.ids[i], i+1, id, prev.n, s.ids[i])
				}
				break
			}
		}
	}
}

// judgeResume: a reader that read up to event L while writes were in
// flight, and resumes after L's cursor once they are done, must read every
// event of the final log it had not read.
func judgeResume(ctx context.Context, w worlds.World, run string, final []eventlog.Event, snaps []snapshot, pageSize int, e *Evidence) error {
	var cand []snapshot
	for _, s := range snaps {
		if len(s.ids) > 0 && len(s.ids) < len(final) {
			cand = append(cand, s)
		}
	}
	step := max(1, len(cand)/maxResumeReads)
	for k := 0; k < len(cand); k += step {
		s := cand[k]
		rest, err := listAll(ctx, w, run, eventlog.Cursor{ID: s.ids[len(s.ids)-1]}, pageSize)
		if err != nil {
			return fmt.Errorf("resume reader %d after %s: %w", s.reader, s.ids[len(s.ids)-1], err)
		}
		e.Observed++
		got := map[string]bool{}
		for _, id := range s.ids {
			got[id] = true
		}
		for _, ev := range rest {
			got[ev.ID] = true
		}
		for _, ev := range final {
			if !got[ev.ID] {
				if e.Counterexample == "" {
					e.Counterexample = fmt.Sprintf("run %s: reader %d read %d events up to %s (read %d), resumed after it and never read event %s: committed after that read with a smaller id",
						run, s.reader, len(s.ids), s.ids[len(s.ids)-1], s.n, ev.ID)
				}
				break
			}
		}
	}
	return nil
}

// judgeCommit: events committed in id order: an event whose id sorts
// before another's but committed strictly after it is a window in which a
// reader could see the later id without the earlier.
func judgeCommit(run string, times []worlds.CommitTime, e *Evidence) {
	sorted := slices.Clone(times)
	slices.SortFunc(sorted, func(a, b worlds.CommitTime) int {
		switch {
		case a.EventID < b.EventID:
			return -1
		case a.EventID > b.EventID:
			return 1
		}
		return 0
	})
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			e.Observed++
			a, b := sorted[i], sorted[j]
			if a.At.After(b.At) && e.Counterexample == "" {
				e.Counterexample = fmt.Sprintf("run %s: event %s committed %s after event %s, whose id sorts after it (%s clock)",
					run, a.EventID, a.At.Sub(b.At), b.EventID, a.Source)
			}
		}
	}
}

// tempDir makes a directory for one world and returns its removal.
func tempDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "stormctl-certify-")
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrMachine, err)
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
