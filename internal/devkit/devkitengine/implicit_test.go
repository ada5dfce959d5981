package devkitengine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds/devkitworld"
)

// recorder keeps what the engine records, in order.
type recorder struct {
	mu  sync.Mutex
	ops []history.Op
}

func (r *recorder) Record(op history.Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// recordedNotices are op notices the host wrote in a beta storm
// (@workflow/core 5.0.0-beta.55 on world-local beta.46, 2026-12-05): a
// run_started that wrote the run's missing run_created, and a
// step_started that wrote a synthetic step_created first.
func recordedNotices(t *testing.T) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "implicit-notices.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
}

// edit returns line with its fields set to the given JSON values.
func edit(t *testing.T, line []byte, fields map[string]string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		m[k] = json.RawMessage(v)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImplicitWrites: an event the package wrote inside another call is
// an append of the invocation that made the call, with the call's times,
// marked implicit, recorded before the call's own op; it committed
// whether or not the call then failed. One the host could not read stops
// the storm (the history would miss a write), after everything readable
// was recorded.
func TestImplicitWrites(t *testing.T) {
	t.Parallel()
	notices := recordedNotices(t)
	runStarted, stepStarted := notices[0], notices[1]
	type want struct {
		kind     string
		typ      eventlog.Type
		seq      int64
		implicit bool
		err      string
	}
	for _, tc := range []struct {
		name    string
		line    []byte
		want    []want
		failure string // what Panicked must say ("" for nil)
	}{
		{name: "run_started writes the missing run_created", line: runStarted, want: []want{
			{history.OpAppend, eventlog.RunCreated, 1, true, ""},
			{history.OpAppend, eventlog.Type("run_started"), 2, false, ""}}},
		{name: "step_started writes a synthetic step_created", line: stepStarted, want: []want{
			{history.OpAppend, eventlog.StepCreated, 118, true, ""},
			{history.OpAppend, eventlog.StepStarted, 121, false, ""}}},
		{name: "a failed call's implicit write committed",
			line: edit(t, stepStarted, map[string]string{"result": `null`,
				"error": `{"name":"EntityConflictError","message":"step already started"}`}),
			want: []want{
				{history.OpAppend, eventlog.StepCreated, 118, true, ""},
				{history.OpAppend, eventlog.StepStarted, 0, false, "conflict"}}},
		{name: "an implicit write the host could not read",
			line:    edit(t, stepStarted, map[string]string{"implicit": `[{"file":"wrun_01M92HHGK9QVZPDY8S0Z44BZ5Z-evnt_00000000000000000000000118.json"}]`}),
			want:    []want{{history.OpAppend, eventlog.StepStarted, 121, false, ""}},
			failure: "implicit write 1 of inv-26's events.create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n notice
			if err := json.Unmarshal(tc.line, &n); err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			e := &Engine{sink: rec, runs: map[string]*run{n.RunID: {token: "wrun_A", done: make(chan struct{})}}, ended: map[string]bool{}}
			e.notice(nil, tc.line)
			if len(rec.ops) != len(tc.want) {
				t.Fatalf("recorded %d ops, want %d: %+v", len(rec.ops), len(tc.want), rec.ops)
			}
			for i, w := range tc.want {
				op := rec.ops[i]
				if op.Kind != w.kind || len(op.Wrote) != 1 || op.Wrote[0].Type != w.typ || op.Wrote[0].Seq != w.seq || op.Implicit != w.implicit || op.Err != w.err {
					t.Errorf("op %d: %+v, want %+v", i, op, w)
					continue
				}
				// The call's actor, run and times; an implicit event its
				// id, position and mint time, committed by the call's end.
				if op.Actor != n.Actor || op.RunID != n.RunID || !op.Start.Equal(msTime(n.Start)) || !op.End.Equal(msTime(n.End)) {
					t.Errorf("op %d: actor %s run %s %v..%v, want the call's", i, op.Actor, op.RunID, op.Start, op.End)
				}
				if w.implicit {
					if wr := op.Wrote[0]; wr.ID != eventlog.SlotID(w.seq) || wr.MintedAt.IsZero() || !wr.CommittedAt.Equal(op.End) {
						t.Errorf("op %d wrote %+v", i, wr)
					}
				}
			}
			err := e.Panicked()
			switch {
			case tc.failure == "" && err != nil:
				t.Errorf("Panicked = %v", err)
			case tc.failure != "" && (err == nil || !strings.Contains(err.Error(), tc.failure)):
				t.Errorf("Panicked = %v, want it to name %q", err, tc.failure)
			}
		})
	}
}

// TestImplicitWritesInForensics: with the implicit writes recorded, every
// event of the recorded notices' final log has an append in the history,
// so a run whose commit times are its writers' (commit source "world")
// gets a mint-to-commit window for each, the synthetic step_created
// included; without them it had none.
func TestImplicitWritesInForensics(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	e := &Engine{sink: rec, runs: map[string]*run{}, ended: map[string]bool{}}
	var final []eventlog.Event
	for _, line := range recordedNotices(t) {
		e.notice(nil, line)
		var n notice
		if err := json.Unmarshal(line, &n); err != nil {
			t.Fatal(err)
		}
		var pe devkitworld.PackageEvent
		if err := json.Unmarshal(n.Result, &pe); err != nil {
			t.Fatal(err)
		}
		final = append(final, toEvent(pe, ""))
		for _, raw := range n.Implicit {
			if err := json.Unmarshal(raw, &pe); err != nil {
				t.Fatal(err)
			}
			final = append(final, toEvent(pe, ""))
		}
	}
	for name, ops := range map[string][]history.Op{"with implicit writes": rec.ops, "without": explicitOnly(rec.ops)} {
		windows := forensics.Windows(forensics.AnalyzeRun(forensics.RunInput{Scheme: eventlog.SchemeSlot, Final: final, Ops: ops}).Commits)
		got := windows[eventlog.StepCreated].N + windows[eventlog.RunCreated].N
		if want := map[string]int{"with implicit writes": 2, "without": 0}[name]; got != want {
			t.Errorf("%s: %d windows of run_created and step_created, want %d", name, got, want)
		}
	}
}

// explicitOnly drops the implicit appends of ops.
func explicitOnly(ops []history.Op) []history.Op {
	var out []history.Op
	for _, op := range ops {
		if !op.Implicit {
			out = append(out, op)
		}
	}
	return out
}
