package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/scenarios"
)

// readLog reads a testdata/decide log: one event a line, its type then its
// JSON payload ('#' lines are comments).
func readLog(t *testing.T, name string) []eventlog.Event {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "decide", name))
	if err != nil {
		t.Fatal(err)
	}
	var evs []eventlog.Event
	for n, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		typ, payload, _ := strings.Cut(line, " ")
		tp, err := eventlog.ParseType(typ)
		if err != nil {
			t.Fatalf("%s:%d: %v", name, n+1, err)
		}
		e := eventlog.Event{RunID: "run-1", ID: fmt.Sprintf("evnt_%02d", len(evs)+1), Seq: int64(len(evs) + 1), Type: tp}
		if payload = strings.TrimSpace(payload); payload != "" {
			if !json.Valid([]byte(payload)) {
				t.Fatalf("%s:%d: payload is not JSON: %s", name, n+1, payload)
			}
			e.Payload = json.RawMessage(payload)
		}
		evs = append(evs, e)
	}
	return evs
}

func TestDecide(t *testing.T) {
	control, err := scenarios.Lookup("control")
	if err != nil {
		t.Fatal(err)
	}
	gap := &eventlog.GapError{RunID: "run-1", Want: 3, Got: 4}
	// end is when each run ended; before(d) a time d before it.
	end := time.Date(2025, 3, 1, 12, 4, 0, 0, time.UTC)
	before := func(d time.Duration) time.Time { return end.Add(-d) }
	down := eventlog.Unavailable("postgres: list", io.ErrUnexpectedEOF).Error()
	tests := []struct {
		name    string
		log     string
		readErr error
		stats   history.RunStats
		want    history.Outcome
		// detail, when set, is the exact detail wanted.
		detail string
	}{
		{name: "right output", log: "completed.log", want: history.Completed},
		{name: "right output despite infra trouble", log: "completed.log", stats: history.RunStats{InfraErrors: 3}, want: history.Completed},
		{name: "wrong output", log: "wrong-output.log", want: history.Silent},
		{name: "unreadable output", log: "unreadable-output.log", want: history.Silent},
		{name: "output without input", log: "completed-without-input.log", want: history.Silent},
		{name: "corrupted event log", log: "corrupted.log", want: history.Corrupted,
			detail: "Replay could not consume event step_completed for c1"},
		{name: "gap found by the engine", log: "gap.log", want: history.Gap, detail: "run r1: gap at seq 3"},
		{name: "another failure", log: "failed.log", want: history.Failed, detail: "WORKFLOW_ERROR: decode run input"},
		{name: "no terminal event", log: "no-terminal.log", want: history.Stuck},
		{name: "nothing written", log: "empty.log", want: history.Stuck},
		// A run without a terminal event is infra only when it stopped on
		// an unavailable store: its last store error was one, within
		// InfraWindow of its end, and the store answered nothing after it.
		{name: "timed out on an unavailable store", log: "no-terminal.log",
			stats: history.RunStats{InfraErrors: 40, LastStoreOK: before(70 * time.Second), LastUnavailable: before(2 * time.Second), LastUnavailableErr: down},
			want:  history.Infra, detail: "no terminal event; the store was unavailable at the end: the last error, 2s before it, was " + down + ", and no operation succeeded after it"},
		{name: "unavailable from its start", log: "empty.log",
			stats: history.RunStats{InfraErrors: 9, LastUnavailable: before(time.Second), LastUnavailableErr: down}, want: history.Infra},
		{name: "last unavailable error at the window's edge", log: "no-terminal.log",
			stats: history.RunStats{InfraErrors: 1, LastStoreOK: before(InfraWindow + time.Second), LastUnavailable: before(InfraWindow), LastUnavailableErr: down}, want: history.Infra},
		{name: "an early store error, the store answering after it", log: "no-terminal.log",
			stats: history.RunStats{InfraErrors: 1, LastUnavailable: before(200 * time.Second), LastUnavailableErr: down, LastStoreOK: before(time.Second)},
			want:  history.Stuck, detail: "no terminal event before the timeout, not for the store: its last unavailable error was 3m20s before the end, the store answering after it (infrastructure errors: 1)"},
		{name: "a recent store error, the store answering after it", log: "no-terminal.log",
			stats: history.RunStats{InfraErrors: 3, LastUnavailable: before(5 * time.Second), LastUnavailableErr: down, LastStoreOK: before(time.Second)}, want: history.Stuck},
		{name: "last unavailable error past the window, nothing after it", log: "no-terminal.log",
			stats: history.RunStats{InfraErrors: 1, LastStoreOK: before(InfraWindow + 2*time.Second), LastUnavailable: before(InfraWindow + time.Second), LastUnavailableErr: down},
			want:  history.Stuck},
		{name: "infra errors counted without their time", log: "no-terminal.log", stats: history.RunStats{InfraErrors: 2}, want: history.Stuck},
		// An unrecognised error is failed with its text, never infra.
		{name: "an unrecognised error", log: "no-terminal.log",
			stats: history.RunStats{Unrecognised: 2, UnrecognisedErr: "decode row: unexpected column", LastStoreOK: before(time.Second)},
			want:  history.Failed, detail: "no terminal event; unrecognised errors: 2, the first: decode row: unexpected column"},
		{name: "an unrecognised error on an unavailable store", log: "no-terminal.log",
			stats: history.RunStats{InfraErrors: 5, Unrecognised: 1, UnrecognisedErr: "append step_created: odd", LastUnavailable: before(time.Second), LastUnavailableErr: down},
			want:  history.Failed, detail: "no terminal event; unrecognised errors: 1, the first: append step_created: odd"},
		{name: "an unrecognised error does not undo a terminal event", log: "completed.log",
			stats: history.RunStats{Unrecognised: 1, UnrecognisedErr: "odd"}, want: history.Completed},
		{name: "completed first decides", log: "completed-then-failed.log", want: history.Completed},
		{name: "failed first decides", log: "failed-then-completed.log", want: history.Corrupted, detail: "diverged three times"},

		// A read error decides before the log does.
		{name: "read found a gap", log: "completed.log", readErr: gap, want: history.Gap, detail: gap.Error()},
		{name: "read found a wrapped gap", log: "no-terminal.log", readErr: fmt.Errorf("dump: %w", gap), want: history.Gap},
		{name: "read found a duplicate", log: "no-terminal.log", readErr: &eventlog.DuplicateError{RunID: "run-1", Seq: 2}, want: history.Gap},
		{name: "store unavailable", log: "completed.log", readErr: eventlog.Unavailable("list", io.ErrUnexpectedEOF), want: history.Infra},
		{name: "read timed out", log: "empty.log", readErr: fmt.Errorf("list: %w", context.DeadlineExceeded), want: history.Infra},
		{name: "read met an unrecognised error", log: "completed.log", readErr: fmt.Errorf("list: %w", errors.New("decode row: odd")), want: history.Failed,
			detail: "read the final log: list: decode row: odd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			final := readLog(t, tt.log)
			got, detail := decide(control, final, tt.readErr, tt.stats, end)
			if got != tt.want {
				t.Fatalf("decide = %s (%s), want %s", got, detail, tt.want)
			}
			switch {
			case tt.detail != "" && detail != tt.detail:
				t.Errorf("detail = %q, want %q", detail, tt.detail)
			case got == history.Completed && detail != "":
				t.Errorf("a completed run has detail %q", detail)
			case got != history.Completed && detail == "":
				t.Errorf("outcome %s without a detail", got)
			}
		})
	}
}

// TestDecideSilentNamesLedgerError checks that a silent outcome carries the
// scenario's own account of what is wrong with the ledger.
func TestDecideSilentNamesLedgerError(t *testing.T) {
	control, err := scenarios.Lookup("control")
	if err != nil {
		t.Fatal(err)
	}
	final := readLog(t, "wrong-output.log")
	var input, output json.RawMessage
	for _, e := range final {
		switch e.Type {
		case eventlog.RunCreated:
			input = e.Payload
		case eventlog.RunCompleted:
			if output, err = engine.Output(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	ledgerErr := control.Check(input, output)
	if ledgerErr == nil {
		t.Fatal("the control check accepts the fixture's wrong output")
	}
	got, detail := decide(control, final, nil, history.RunStats{}, time.Now())
	if got != history.Silent || detail != ledgerErr.Error() {
		t.Errorf("decide = %s, %q; want silent, %q", got, detail, ledgerErr)
	}
}

// TestDecideUsesTheScenariosCheck runs one completed log past two scenarios:
// the same output is right for one and wrong for the other.
func TestDecideUsesTheScenariosCheck(t *testing.T) {
	final := readLog(t, "completed.log")
	for _, tt := range []struct {
		scenario string
		want     history.Outcome
	}{
		{"control", history.Completed},
		{"step-storm", history.Silent},
		{"hook-storm", history.Silent},
		{"blocked-branch", history.Silent},
		{"wake-loop", history.Silent},
	} {
		sc, err := scenarios.Lookup(tt.scenario)
		if err != nil {
			t.Fatal(err)
		}
		if got, detail := decide(sc, final, nil, history.RunStats{}, time.Now()); got != tt.want {
			t.Errorf("%s: decide = %s (%s), want %s", tt.scenario, got, detail, tt.want)
		}
	}
}

// TestDecideSlot covers the slot scheme's own outcomes: a hole that failed
// the run, a run stopped at a hole, and a seal race.
func TestDecideSlot(t *testing.T) {
	control, err := scenarios.Lookup("control")
	if err != nil {
		t.Fatal(err)
	}
	ev := func(seq int64, typ eventlog.Type, payload string) eventlog.Event {
		e := eventlog.Event{RunID: "run-1", ID: eventlog.SlotID(seq), Seq: seq, Type: typ}
		if payload != "" {
			e.Payload = json.RawMessage(payload)
		}
		return e
	}
	holeFail := `{"code":"CORRUPTED_EVENT_LOG","reason":"hole","message":"run run-1: event log hole: slot 3 is empty below committed slot 4"}`
	tests := []struct {
		name  string
		final []eventlog.Event
		stats history.RunStats
		want  history.Outcome
	}{
		{"the engine refused a hole", []eventlog.Event{ev(1, eventlog.RunCreated, `{}`), ev(2, eventlog.HookCreated, ""), ev(4, eventlog.HookReceived, ""), ev(5, eventlog.RunFailed, holeFail)},
			history.RunStats{HoleRefusals: 4}, history.Hole},
		{"stopped at a hole without a terminal", []eventlog.Event{ev(1, eventlog.RunCreated, `{}`), ev(3, eventlog.HookReceived, "")},
			history.RunStats{HoleRefusals: 1}, history.Hole},
		{"a hole nobody read is not the outcome", []eventlog.Event{ev(1, eventlog.RunCreated, `{}`), ev(3, eventlog.HookReceived, "")},
			history.RunStats{}, history.Stuck},
		{"a seal and a late commit both visible", []eventlog.Event{ev(1, eventlog.RunCreated, `{}`), ev(2, eventlog.Noop, `{}`), ev(2, eventlog.StepCompleted, "")},
			history.RunStats{}, history.Corrupted},
		{"a corrupted log without a hole reason stays corrupted", []eventlog.Event{ev(1, eventlog.RunCreated, `{}`), ev(2, eventlog.RunFailed, `{"code":"CORRUPTED_EVENT_LOG","message":"x"}`)},
			history.RunStats{}, history.Corrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, detail := decide(control, tt.final, nil, tt.stats, time.Now())
			if got != tt.want || detail == "" {
				t.Fatalf("decide = %s (%q), want %s with a detail", got, detail, tt.want)
			}
		})
	}
}
