package pipeline

import (
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/devkit/devkitengine"
	"github.com/stormctl/stormctl/internal/engines/model"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

// TestRefusedWritesOfThePublishedRuntime: a live run of the published
// runtime counts every write its world refused as a rejection, each with a
// verdict (unknown, until judged), so true positive + benign + unknown =
// rejections; a model run's conflicts are no rejections (its fence's are,
// judged by verdict.Judge).
func TestRefusedWritesOfThePublishedRuntime(t *testing.T) {
	sc, err := scenarios.Lookup("control")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC)
	ops := []history.Op{
		{Kind: history.OpAppend, Actor: "inv-1", Start: at, End: at, Wrote: []history.OpEvent{{Type: eventlog.RunCreated}}},
		{Kind: history.OpAppend, Actor: "inv-2", Start: at, End: at, Err: "conflict", Wrote: []history.OpEvent{{Type: eventlog.StepCreated, CorrelationID: "step_1"}}},
		{Kind: history.OpAppend, Actor: "inv-3", Start: at, End: at, Err: "refused", Wrote: []history.OpEvent{{Type: eventlog.RunStarted}}},
		{Kind: history.OpList, Actor: "inv-3", Start: at, End: at},
	}
	run := Run{ID: "wrun_x", Started: at, Ended: at.Add(time.Second), Ops: ops,
		Collected: worlds.Collected{Final: []eventlog.Event{{RunID: "wrun_x", ID: "evnt_1", Type: eventlog.RunCreated}}}}
	for _, tt := range []struct {
		engine     string
		rejections int64
	}{{devkitengine.Name, 2}, {model.Name, 0}} {
		t.Run(tt.engine, func(t *testing.T) {
			c := Cell{Key: history.NewCellKey("devkit-local", "control", "main"), Scenario: sc}
			c.Knobs.Engine = tt.engine
			rec := Process(c, run).Record
			if rec.Stats.Rejections != tt.rejections || !rec.Judged {
				t.Fatalf("rejections %d (judged %v), want %d", rec.Stats.Rejections, rec.Judged, tt.rejections)
			}
			tp, benign, unknown := verdict.Split(rec.Verdicts)
			if int64(tp+benign+unknown) != rec.Stats.Rejections {
				t.Errorf("verdicts %d+%d+%d, rejections %d", tp, benign, unknown, rec.Stats.Rejections)
			}
		})
	}
}

// TestAddLate: a refusal between a published run's end and its record is
// counted with a verdict; a model run's record is left as it was.
func TestAddLate(t *testing.T) {
	late := []history.Op{
		{Kind: history.OpAppend, Actor: "inv-9", Err: "refused", Wrote: []history.OpEvent{{Type: eventlog.RunCompleted}}},
		{Kind: history.OpList, Actor: "inv-9"},
	}
	for _, tt := range []struct {
		engine string
		want   int64
	}{{devkitengine.Name, 3}, {model.Name, 2}} {
		var c Cell
		c.Knobs.Engine = tt.engine
		rec := reports.RunRecord{Judged: true, Verdicts: make([]verdict.Judgement, 2)}
		rec.Stats.Rejections = 2
		AddLate(c, &rec, late)
		if rec.Stats.Rejections != tt.want || int64(len(rec.Verdicts)) != tt.want {
			t.Errorf("%s: %d rejections, %d verdicts; want %d each", tt.engine, rec.Stats.Rejections, len(rec.Verdicts), tt.want)
		}
	}
}
