package worldtest

import (
	"encoding/json"
	"fmt"

	"github.com/stormctl/stormctl/eventlog"
)

// draft is a draft of type t for correlation id corr with a small payload.
func draft(t eventlog.Type, corr string) eventlog.Draft {
	return eventlog.Draft{Type: t, CorrelationID: corr, Payload: json.RawMessage(fmt.Sprintf(`{"corr":%q}`, corr))}
}

// mix returns n drafts with distinct idempotency keys, cycling through
// decisions and facts, hook tokens and dedup values included.
func mix(tag string, n int) []eventlog.Draft {
	out := make([]eventlog.Draft, n)
	for i := range out {
		corr := fmt.Sprintf("%s_%03d", tag, i)
		switch i % 6 {
		case 0:
			out[i] = draft(eventlog.StepCreated, corr)
		case 1:
			out[i] = draft(eventlog.StepStarted, corr)
		case 2:
			out[i] = draft(eventlog.HookCreated, corr)
			out[i].Token = "tok_" + corr
		case 3:
			out[i] = draft(eventlog.HookReceived, corr)
			out[i].Dedup = "payload_1"
		case 4:
			out[i] = draft(eventlog.WaitCreated, corr)
		default:
			out[i] = draft(eventlog.StepCompleted, corr)
		}
	}
	return out
}

// decisions returns n step_created drafts with distinct correlation ids.
func decisions(tag string, n int) []eventlog.Draft {
	out := make([]eventlog.Draft, n)
	for i := range out {
		out[i] = draft(eventlog.StepCreated, fmt.Sprintf("%s_%03d", tag, i))
	}
	return out
}
