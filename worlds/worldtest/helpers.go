package worldtest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// The helpers below are for a world's own tests, beside Exercise: each
// fails the test on an error instead of returning it.

// NewRun creates r on w and returns its id; an empty r.ID becomes a fresh
// "wrun_" id, so that tests sharing a world never share a run.
func NewRun(t testing.TB, w worlds.World, r eventlog.Run) string {
	t.Helper()
	if r.ID == "" {
		r.ID = "wrun_" + ulid.Make().String()
	}
	if err := w.CreateRun(t.Context(), r); err != nil {
		t.Fatalf("CreateRun(%s, %s): %v", r.ID, r.Scheme, err)
	}
	return r.ID
}

// Draft returns a draft of type typ for correlation id corr with a small
// JSON payload naming corr.
func Draft(typ eventlog.Type, corr string) eventlog.Draft {
	return eventlog.Draft{Type: typ, CorrelationID: corr, Payload: json.RawMessage(fmt.Sprintf(`{"corr":%q}`, corr))}
}

// Append appends d to the run unfenced and returns the events written.
func Append(t testing.TB, w worlds.World, runID string, d ...eventlog.Draft) []eventlog.Event {
	t.Helper()
	evs, err := w.Append(t.Context(), runID, d)
	if err != nil {
		t.Fatalf("Append(%s, %d drafts): %v", runID, len(d), err)
	}
	return evs
}

// AppendFenced appends d to the run fenced at expected and returns the
// events written.
func AppendFenced(t testing.TB, w worlds.World, runID string, expected int64, d ...eventlog.Draft) []eventlog.Event {
	t.Helper()
	evs, err := w.AppendFenced(t.Context(), runID, expected, d)
	if err != nil {
		t.Fatalf("AppendFenced(%s, expected %d, %d drafts): %v", runID, expected, len(d), err)
	}
	return evs
}

// ListAll reads the run's whole log, page by page.
func ListAll(t testing.TB, w worlds.World, runID string) []eventlog.Event {
	t.Helper()
	var out []eventlog.Event
	after := eventlog.Cursor{}
	for {
		p, err := w.List(t.Context(), runID, after, 1000)
		if err != nil {
			t.Fatalf("List(%s, after %+v): %v", runID, after, err)
		}
		out = append(out, p.Events...)
		if !p.More || len(p.Events) == 0 {
			return out
		}
		after = p.Next
	}
}

// Latency parses a --latency spec ("none", "seed" or "fixed:DUR"), seeded
// with 1.
func Latency(t testing.TB, spec string) worlds.Profile {
	t.Helper()
	p, err := worlds.ParseProfile(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Schemes returns the schemes entry lists, for a world's own tests that
// loop over them.
func Schemes(entry worlds.Entry) []eventlog.Scheme {
	out := make([]eventlog.Scheme, len(entry.Schemes))
	for i, s := range entry.Schemes {
		out[i] = eventlog.Scheme(s)
	}
	return out
}
