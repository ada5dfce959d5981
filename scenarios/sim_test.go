package scenarios

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// simRun runs a scenario's program in virtual time over an in-memory log,
// as a clean engine would: one replay (engine.Replay, call-site ids, ordered
// wakes) after every batch of facts due at one instant; a step starts as it
// is created, writes its attributes out of band and completes Took later; a
// wait completes at its resumeAt (rounded up to whole waitTicks after its
// creation when waitTick is set, as the engine's timer wake-ups are); hook
// payloads arrive when the test's driver model schedules them.
type simRun struct {
	t        testing.TB
	sc       Scenario
	env      Env
	runID    string
	waitTick time.Duration
	// onHook is the driver model: called for every hook_created appended.
	onHook func(s *simRun, token string)

	start, now time.Time
	log        []eventlog.Event
	at         []time.Time // virtual time of each event in log
	queue      []simDue
	n          int
	hooks      map[string]string // token -> correlation id
	disposed   map[string]bool   // correlation id -> disposed
	dropped    []string          // tokens of payloads sent to a disposed hook
	replays    int
	output     json.RawMessage
}

type simDue struct {
	at time.Time
	n  int
	fn func(s *simRun)
}

var simStart = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func newSim(t testing.TB, sc Scenario, env Env) *simRun {
	return &simRun{t: t, sc: sc, env: env, runID: "run-sim", start: simStart, now: simStart,
		hooks: map[string]string{}, disposed: map[string]bool{}}
}

// after schedules fn at d after now.
func (s *simRun) after(d time.Duration, fn func(s *simRun)) {
	s.n++
	s.queue = append(s.queue, simDue{at: s.now.Add(max(d, 0)), n: s.n, fn: fn})
}

// resume schedules a hook payload d from now, as a driver's ResumeHook; it
// is dropped if the hook is disposed (or unknown) by then.
func (s *simRun) resume(d time.Duration, token string, payload any, dedup string) {
	s.after(d, func(s *simRun) {
		corr, ok := s.hooks[token]
		if !ok || s.disposed[corr] {
			s.dropped = append(s.dropped, token)
			return
		}
		s.append(eventlog.Draft{Type: eventlog.HookReceived, CorrelationID: corr, Dedup: dedup, Payload: mustMarshal(payload)})
	})
}

func (s *simRun) append(d eventlog.Draft) {
	s.log = append(s.log, eventlog.Event{RunID: s.runID, ID: fmt.Sprintf("e%05d", len(s.log)), Seq: int64(len(s.log) + 1),
		Type: d.Type, CorrelationID: d.CorrelationID, Token: d.Token, Dedup: d.Dedup, Payload: d.Payload})
	s.at = append(s.at, s.now)
}

// run runs the program to its end and returns its output.
func (s *simRun) run(input any) json.RawMessage {
	s.t.Helper()
	s.append(eventlog.Draft{Type: eventlog.RunCreated, Payload: mustMarshal(input)})
	for range 100000 {
		out := engine.Replay(s.sc.Program, s.runID, s.log, engine.ReplayMode{IDs: engine.IDsCallsite, Wake: engine.WakeOrdered}, s.now)
		s.replays++
		switch {
		case out.Divergence != nil:
			s.t.Fatalf("%s diverged at +%s: %v", s.sc.Name, s.elapsed(), out.Divergence)
		case out.Terminal != nil:
			s.t.Fatalf("%s: replay found a terminal event the simulation did not stop at", s.sc.Name)
		}
		for _, d := range out.Decisions {
			s.decide(d)
		}
		if s.output != nil {
			return s.output
		}
		if len(s.queue) == 0 {
			s.t.Fatalf("%s is stuck at +%s: nothing due, no decision", s.sc.Name, s.elapsed())
		}
		sort.SliceStable(s.queue, func(i, j int) bool {
			if !s.queue[i].at.Equal(s.queue[j].at) {
				return s.queue[i].at.Before(s.queue[j].at)
			}
			return s.queue[i].n < s.queue[j].n
		})
		s.now = s.queue[0].at
		for len(s.queue) > 0 && s.queue[0].at.Equal(s.now) {
			due := s.queue[0]
			s.queue = s.queue[1:]
			due.fn(s)
		}
	}
	s.t.Fatalf("%s did not finish", s.sc.Name)
	return nil
}

func (s *simRun) elapsed() time.Duration { return s.now.Sub(s.start) }

// decide appends a decision and starts the work it implies.
func (s *simRun) decide(d eventlog.Draft) {
	s.t.Helper()
	s.append(d)
	switch d.Type {
	case eventlog.StepCreated:
		var p struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal(d.Payload, &p); err != nil {
			s.t.Fatal(err)
		}
		fn, ok := s.sc.Steps[p.Name]
		if !ok {
			s.t.Fatalf("%s calls step %q it does not register", s.sc.Name, p.Name)
		}
		res, err := fn(p.Args)
		if err != nil {
			s.t.Fatalf("step %s%s: %v", p.Name, p.Args, err)
		}
		corr := d.CorrelationID
		s.append(eventlog.Draft{Type: eventlog.StepStarted, CorrelationID: corr})
		for _, k := range slices.Sorted(maps.Keys(res.Attrs)) {
			s.append(eventlog.Draft{Type: eventlog.AttrSet, CorrelationID: corr, Dedup: engine.StepAttrDedup + k,
				Payload: mustMarshal(map[string]any{"key": k, "value": res.Attrs[k]})})
		}
		done := eventlog.Draft{Type: eventlog.StepCompleted, CorrelationID: corr,
			Payload: mustMarshal(map[string]any{"result": res.Result})}
		s.after(res.Took, func(s *simRun) { s.append(done) })
	case eventlog.WaitCreated:
		var p struct {
			ResumeAt time.Time `json:"resumeAt"`
		}
		if err := json.Unmarshal(d.Payload, &p); err != nil {
			s.t.Fatal(err)
		}
		wait := p.ResumeAt.Sub(s.now)
		if s.waitTick > 0 {
			wait = (max(wait, s.waitTick) + s.waitTick - 1) / s.waitTick * s.waitTick
		}
		done := eventlog.Draft{Type: eventlog.WaitCompleted, CorrelationID: d.CorrelationID}
		s.after(wait, func(s *simRun) { s.append(done) })
	case eventlog.HookCreated:
		s.hooks[d.Token] = d.CorrelationID
		if s.onHook != nil {
			s.onHook(s, d.Token)
		}
	case eventlog.HookDisposed:
		s.disposed[d.CorrelationID] = true
	case eventlog.RunCompleted:
		out, err := engine.Output(s.log[len(s.log)-1])
		if err != nil {
			s.t.Fatal(err)
		}
		s.output = out
	case eventlog.RunFailed:
		s.t.Fatalf("%s failed: %s", s.sc.Name, d.Payload)
	}
}

// entity names what each correlation id of the log is: a step's name and
// arguments, a wait's duration, a hook's token.
func (s *simRun) entity() map[string]string {
	names := map[string]string{}
	for _, e := range s.log {
		switch e.Type {
		case eventlog.StepCreated:
			var p struct {
				Name string   `json:"name"`
				Args stepArgs `json:"args"`
			}
			_ = json.Unmarshal(e.Payload, &p)
			p.Args.Ms = 0
			names[e.CorrelationID] = expect(p.Name, p.Args)
		case eventlog.WaitCreated:
			var p struct {
				DurationMs int64 `json:"durationMs"`
			}
			_ = json.Unmarshal(e.Payload, &p)
			names[e.CorrelationID] = fmt.Sprintf("sleep(%dms)", p.DurationMs)
		case eventlog.HookCreated:
			names[e.CorrelationID] = "hook " + e.Token
		}
	}
	return names
}

// history renders the log one event a line, "type entity", leaving out
// step_started and the types skip names.
func (s *simRun) history(skip ...eventlog.Type) []string {
	names := s.entity()
	var out []string
	for _, e := range s.log {
		if e.Type == eventlog.StepStarted || slices.Contains(skip, e.Type) {
			continue
		}
		line := string(e.Type)
		if n := names[e.CorrelationID]; n != "" {
			line += " " + n
		}
		out = append(out, line)
	}
	return out
}

// indexOf is the index in lines of the first line equal to want (-1: none).
func indexOf(lines []string, want string) int { return slices.Index(lines, want) }

// countPrefix counts the lines starting with prefix.
func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
