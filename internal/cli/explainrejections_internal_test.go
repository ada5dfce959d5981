package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/analysis/verdict"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestWriteRejections: a run's rejections are listed by verdict, true
// positives first, a line per kind of write with how many and the first
// one's reason, under a line whose split sums to them.
func TestWriteRejections(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	w := func(typ eventlog.Type, corr string) *verdict.RefusedWrite {
		return &verdict.RefusedWrite{Type: typ, CorrelationID: corr, Err: "conflict"}
	}
	js := []verdict.Judgement{
		{Actor: "inv-1", At: at, Verdict: verdict.Benign, Reason: "admitted, the same", Write: w(eventlog.StepCreated, "step_1")},
		{Actor: "inv-2", At: at, Verdict: verdict.TruePositive, Reason: "admitted, it diverges", Write: w(eventlog.StepCreated, "step_1")},
		{Actor: "inv-3", At: at, Verdict: verdict.Benign, Reason: "admitted, the same again", Write: w(eventlog.StepCreated, "step_1")},
		{Actor: "inv-4", At: at, Verdict: verdict.Unknown, Reason: "not judged: no data", Write: w(eventlog.WaitCompleted, "wait_1")},
	}
	var b strings.Builder
	writeRejections(&b, js, false)
	want := "\n4 rejections: 1 true positive, 2 benign, 1 unknown\n" +
		"  true_positive x1, first by inv-2 at 12:00:00.000: admitted, it diverges\n" +
		"  unknown x1, first by inv-4 at 12:00:00.000: not judged: no data\n" +
		"  benign x2, first by inv-1 at 12:00:00.000: admitted, the same\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writeRejections(&b, nil, false)
	if b.Len() != 0 {
		t.Errorf("no rejection wrote %q", b.String())
	}
}
