package verdict_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

func TestRefused(t *testing.T) {
	at := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	step := []history.OpEvent{{Type: eventlog.StepCreated, CorrelationID: "step_1"}}
	tests := []struct {
		name string
		op   history.Op
		want string // the reason's start; "" when not a rejection
	}{
		{"a duplicate creation", history.Op{Kind: history.OpAppend, Actor: "inv-2", End: at, Err: "conflict", Wrote: step}, "the world refused step_created step_1 (conflict)"},
		{"a write to an ended run", history.Op{Kind: history.OpAppend, Err: "refused", Wrote: []history.OpEvent{{Type: eventlog.RunStarted}}}, "the world refused run_started (refused)"},
		{"a store's own fence", history.Op{Kind: history.OpAppendFenced, Err: "fenced", Wrote: step}, "the world refused step_created step_1 (fenced)"},
		{"a duplicate", history.Op{Kind: history.OpAppend, Err: "duplicate"}, "the world refused an append (duplicate)"},
		{"an accepted append", history.Op{Kind: history.OpAppend, Wrote: step}, ""},
		{"an unreachable store", history.Op{Kind: history.OpAppend, Err: "unavailable", Wrote: step}, ""},
		{"a read's error", history.Op{Kind: history.OpList, Err: "conflict"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := verdict.Refused([]history.Op{tt.op})
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("Refused = %+v, want no rejection", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("Refused = %+v, want one rejection", got)
			}
			j := got[0]
			if j.Verdict != verdict.Unknown || !j.Pending || !strings.HasPrefix(j.Reason, tt.want) || j.Actor != tt.op.Actor || !j.At.Equal(tt.op.End) {
				t.Errorf("Refused = %+v, want a pending unknown verdict by %s at %s, reason %q...", j, tt.op.Actor, tt.op.End, tt.want)
			}
			if len(tt.op.Wrote) > 0 && (j.Write == nil || j.Write.Type != tt.op.Wrote[0].Type || j.Write.Err != tt.op.Err) {
				t.Errorf("Refused = %+v, want what was refused (%s, %s) kept for its judgement", j, tt.op.Wrote[0].Type, tt.op.Err)
			}
		})
	}
}

// TestRefusedCountsEveryRefusedWrite reads the histories the devkit engine
// recorded (explain's fixtures of the published runtime) and checks that
// every append a world answered conflict or refused is a rejection.
func TestRefusedCountsEveryRefusedWrite(t *testing.T) {
	paths, err := filepath.Glob(filetest.Repo("internal", "analysis", "explain", "testdata", "devkit", "*", "history.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recorded devkit histories: %v", err)
	}
	total := 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var ops []history.Op
		refused := 0
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var raw map[string]any
			if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if raw["op"] == "append" && (raw["err"] == "conflict" || raw["err"] == "refused") {
				refused++
			}
			var op history.Op
			if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			ops = append(ops, op)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if got := len(verdict.Refused(ops)); got != refused {
			t.Errorf("%s: %d rejections, the history holds %d refused appends", p, got, refused)
		}
		total += refused
	}
	if total == 0 {
		t.Fatal("the fixtures hold no refused write: the test checks nothing")
	}
}
