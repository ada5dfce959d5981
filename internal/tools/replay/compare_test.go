package replay

import (
	"encoding/json"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

func TestSamePayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		typ               eventlog.Type
		recorded, drafted string
		same              bool
	}{
		{"equal", eventlog.StepCompleted, `{"result":"a"}`, `{"result":"a"}`, true},
		{"different result", eventlog.StepCompleted, `{"result":"a"}`, `{"result":"b"}`, false},
		{"a timestamp stored to the millisecond", eventlog.WaitCompleted,
			`{"resumeAt":"2026-12-04T17:17:01.49Z"}`, `{"resumeAt":"2026-12-04T17:17:01.490278356Z"}`, true},
		{"a different instant", eventlog.WaitCompleted,
			`{"resumeAt":"2026-12-04T17:17:01.49Z"}`, `{"resumeAt":"2026-12-04T17:17:01.491Z"}`, false},
		{"wait_created: the duration, when stored", eventlog.WaitCreated,
			`{"durationMs":1000,"resumeAt":"2026-12-04T17:17:01Z"}`, `{"durationMs":2500,"resumeAt":"2026-12-04T17:17:01Z"}`, false},
		{"wait_created: a package that stores only resumeAt", eventlog.WaitCreated,
			`{"resumeAt":"2026-12-04T17:16:58.841Z"}`, `{"durationMs":1000,"resumeAt":"2026-12-04T17:16:58.841564513Z"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := eventlog.Event{Type: tt.typ, Payload: json.RawMessage(tt.recorded)}
			d := eventlog.Draft{Type: tt.typ, Payload: json.RawMessage(tt.drafted)}
			if got := samePayload(e, d); (got == "") != tt.same {
				t.Errorf("samePayload = %q, want same %v", got, tt.same)
			}
		})
	}
}
