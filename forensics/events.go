package forensics

import (
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// CommitEvents joins a run's final log with commit times: the store's own
// (already on the events) when storeTimes, else the ones its writers
// observed (from the recorded history), falling back to the time the world
// stored on the event.
func CommitEvents(final []eventlog.Event, ops []history.Op, storeTimes bool) []CommitEvent {
	var commits map[string]time.Time
	if !storeTimes {
		commits = CommitTimes(ops)
	}
	out := make([]CommitEvent, len(final))
	for i, e := range final {
		c := e.CommittedAt
		if t, ok := commits[e.ID]; ok {
			c = t
		}
		out[i] = CommitEvent{ID: e.ID, Seq: e.Seq, Type: e.Type, MintedAt: e.MintedAt, CommitAt: c}
	}
	return out
}
