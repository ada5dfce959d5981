package backend

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// runState is a run's entities as its events make them: what the server
// validates a new event against. It is folded from the run's events, read
// anew for every write: a write decided on it lands after its window, so
// two writes may decide on the same state (the legacy race, the
// server's); the entities' keys (decision.keys), claimed in the write's
// own transaction, keep what must happen once from happening twice.
type runState struct {
	runID     string
	created   *Event
	started   *Event
	terminal  *Event
	status    string // pending, running, completed, failed, cancelled ("" before run_created)
	updatedAt time.Time
	steps     map[string]*stepState
	hooks     map[string]*hookState
	waits     map[string]*waitState
	// tokens are the live hooks' tokens (to the hook's correlation id);
	// disposals counts each token's releases, a generation of its key.
	tokens    map[string]string
	disposals map[string]int
	// resumes are the hook_received events of lazy hook resumes, by their
	// resumeId (slot contract).
	resumes map[string]*Event
}

type stepState struct {
	created     Event
	status      string // pending, running, completed, failed
	attempt     int
	retryAfter  *time.Time
	startedAt   *time.Time
	completedAt *time.Time
	last        *Event // the terminal or retrying event, whose payload is the step's output or error
	updatedAt   time.Time
}

type hookState struct {
	created  Event
	disposed bool
}

type waitState struct {
	created   Event
	completed *Event
}

func terminalStatus(s string) bool { return s == "completed" || s == "failed" || s == "cancelled" }

// fold makes the run's state of its events, in the order given (the
// store's: by id).
func fold(runID string, evs []Event) *runState {
	st := &runState{runID: runID, steps: map[string]*stepState{}, hooks: map[string]*hookState{},
		waits: map[string]*waitState{}, tokens: map[string]string{}, disposals: map[string]int{}, resumes: map[string]*Event{}}
	for i := range evs {
		st.apply(evs[i])
	}
	return st
}

// apply moves the state by one event.
func (st *runState) apply(e Event) {
	m, corr := e.Meta, e.Meta.CorrelationID
	st.updatedAt = e.CreatedAt
	switch m.EventType {
	case "run_created":
		if st.created == nil {
			st.created, st.status = &e, "pending"
		}
	case "run_started":
		if st.started == nil {
			st.started = &e
		}
		if !terminalStatus(st.status) {
			st.status = "running"
		}
	case "run_completed", "run_failed", "run_cancelled":
		if st.terminal == nil {
			st.terminal = &e
			st.status = map[string]string{"run_completed": "completed", "run_failed": "failed", "run_cancelled": "cancelled"}[m.EventType]
			st.tokens = map[string]string{} // a finished run's hooks are gone
		}
	case "step_created":
		if st.steps[corr] == nil {
			st.steps[corr] = &stepState{created: e, status: "pending", updatedAt: e.CreatedAt}
		}
	case "step_started", "step_completed", "step_failed", "step_retrying":
		s := st.steps[corr]
		if s == nil {
			return
		}
		s.updatedAt = e.CreatedAt
		switch m.EventType {
		case "step_started":
			s.status, s.attempt, s.retryAfter = "running", s.attempt+1, nil
			if s.startedAt == nil {
				s.startedAt = &e.CreatedAt
			}
		case "step_retrying":
			s.status, s.retryAfter, s.last = "pending", m.RetryAfter, &e
		default:
			s.status, s.completedAt, s.last = map[string]string{"step_completed": "completed", "step_failed": "failed"}[m.EventType], &e.CreatedAt, &e
		}
	case "hook_created":
		if st.hooks[corr] == nil {
			st.hooks[corr] = &hookState{created: e}
			if !terminalStatus(st.status) {
				st.tokens[m.HookToken] = corr
			}
		}
	case "hook_conflict":
		if st.hooks[corr] == nil {
			st.hooks[corr] = &hookState{created: e, disposed: true}
		}
	case "hook_received":
		if id := m.ResumeID; id != "" && st.resumes[id] == nil {
			st.resumes[id] = &e
		}
	case "hook_disposed":
		if h := st.hooks[corr]; h != nil && !h.disposed {
			h.disposed = true
			tok := h.created.Meta.HookToken
			if st.tokens[tok] == corr {
				delete(st.tokens, tok)
			}
			st.disposals[tok]++
		}
	case "wait_created":
		if st.waits[corr] == nil {
			st.waits[corr] = &waitState{created: e}
		}
	case "wait_completed":
		if w := st.waits[corr]; w != nil && w.completed == nil {
			w.completed = &e
		}
	}
}

// decision is what the server does with a new event on a run's state:
// refuse it (status, message), answer with an event already written
// (existing), or write it claiming keys.
type decision struct {
	status  int
	message string
	code    string
	keys    []string
	// existing answers a run_started on a running run: the run's first
	// run_started, nothing written (the event is idempotent).
	existing *Event
	// hookConflict: a hook_created whose token a live hook holds is
	// written as a hook_conflict event instead.
	hookConflict bool
}

func refuse(status int, code, format string, a ...any) decision {
	return decision{status: status, code: code, message: fmt.Sprintf(format, a...)}
}

// tokenKey is the key a live hook's token holds: a generation per release,
// so a token disposed of can be taken again.
func (st *runState) tokenKey(token string) string {
	return "token/" + token + "/" + strconv.Itoa(st.disposals[token])
}

// decide validates a new event of meta on the run's state, as
// @workflow/world-local 4.4.1 validates one (the reference implementation of
// the same storage contract), in HTTP terms: 404 for a run, step, hook or
// wait that does not exist (a hook disposed of, or of a finished run,
// included), 409 for an entity created twice or moved out of a terminal
// state, 410 for a run_started or a step's move on a finished run, 425 for
// a step started before its retryAfter.
func (st *runState) decide(m Meta, now time.Time) decision {
	t, corr := m.EventType, m.CorrelationID
	if t == "run_created" {
		if st.created != nil {
			return refuse(http.StatusConflict, "conflict", "Workflow run %q already exists", st.runID)
		}
		return decision{keys: []string{"run"}}
	}
	// As world-local: an event of a run without run_created is validated
	// against the entities it names only (the run's state has none).
	if payloadField[t] != "" || t == "step_started" || t == "hook_disposed" || t == "wait_created" || t == "wait_completed" {
		if corr == "" && t != "run_started" && t != "run_completed" && t != "run_failed" {
			return refuse(http.StatusBadRequest, "invalid_request", "%s needs a correlationId", t)
		}
	}
	if terminalStatus(st.status) {
		switch t {
		case "run_cancelled":
			if st.status == "cancelled" {
				return decision{} // idempotent: written again
			}
			return refuse(http.StatusConflict, "conflict", "Cannot transition run from terminal state %q", st.status)
		case "run_started":
			return refuse(http.StatusGone, "run_expired", "Workflow run %q is already in terminal state %q", st.runID, st.status)
		case "run_completed", "run_failed":
			return refuse(http.StatusConflict, "conflict", "Cannot transition run from terminal state %q", st.status)
		case "step_created", "hook_created", "wait_created":
			return refuse(http.StatusConflict, "conflict", "Cannot create new entities on run in terminal state %q", st.status)
		}
	}
	switch t {
	case "run_started":
		if st.status == "running" && st.started != nil {
			return decision{existing: st.started}
		}
		return decision{keys: []string{"run/started"}}
	case "run_completed", "run_failed", "run_cancelled":
		return decision{keys: []string{"run/terminal"}}
	case "step_created":
		if st.steps[corr] != nil {
			return refuse(http.StatusConflict, "conflict", "Step %q already exists", corr)
		}
		return decision{keys: []string{"step/" + corr}}
	case "step_started", "step_completed", "step_failed", "step_retrying":
		s := st.steps[corr]
		switch {
		case s == nil:
			return refuse(http.StatusNotFound, "not_found", "Step %q not found", corr)
		case s.status == "completed" || s.status == "failed":
			return refuse(http.StatusConflict, "conflict", "Cannot modify step in terminal state %q", s.status)
		case terminalStatus(st.status) && s.status != "running":
			return refuse(http.StatusGone, "run_expired", "Cannot modify non-running step on run in terminal state %q", st.status)
		case t == "step_started" && s.retryAfter != nil && s.retryAfter.After(now):
			return refuse(http.StatusTooEarly, "too_early", "Cannot start step %q: retryAfter timestamp has not been reached yet", corr)
		case t == "step_completed" || t == "step_failed":
			return decision{keys: []string{"step/" + corr + "/terminal"}}
		}
		return decision{}
	case "hook_created":
		if st.hooks[corr] != nil {
			return refuse(http.StatusConflict, "conflict", "Hook %q already created", corr)
		}
		if _, held := st.tokens[m.HookToken]; held {
			return decision{hookConflict: true}
		}
		return decision{keys: []string{"hook/" + corr, st.tokenKey(m.HookToken)}}
	case "hook_received", "hook_disposed":
		h := st.hooks[corr]
		if h == nil || h.disposed || terminalStatus(st.status) {
			return refuse(http.StatusNotFound, "not_found", "Hook %q not found", corr)
		}
		if t == "hook_disposed" {
			return decision{keys: []string{"hook/" + corr + "/disposed"}}
		}
		return decision{}
	case "wait_created":
		if st.waits[corr] != nil {
			return refuse(http.StatusConflict, "conflict", "Wait %q already exists", corr)
		}
		return decision{keys: []string{"wait/" + corr}}
	case "wait_completed":
		w := st.waits[corr]
		switch {
		case w == nil:
			return refuse(http.StatusNotFound, "not_found", "Wait %q not found", corr)
		case w.completed != nil:
			return refuse(http.StatusConflict, "conflict", "Wait %q already completed", corr)
		}
		return decision{keys: []string{"wait/" + corr + "/completed"}}
	}
	return refuse(http.StatusBadRequest, "unknown_event_type", "unknown event type %q", t)
}
