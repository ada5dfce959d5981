package worldtest

import (
	"fmt"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// mix returns n drafts with distinct idempotency keys, cycling through
// decisions and facts, hook tokens and dedup values included.
func mix(tag string, n int) []eventlog.Draft {
	out := make([]eventlog.Draft, n)
	for i := range out {
		corr := fmt.Sprintf("%s_%03d", tag, i)
		switch i % 6 {
		case 0:
			out[i] = Draft(eventlog.StepCreated, corr)
		case 1:
			out[i] = Draft(eventlog.StepStarted, corr)
		case 2:
			out[i] = Draft(eventlog.HookCreated, corr)
			out[i].Token = "tok_" + corr
		case 3:
			out[i] = Draft(eventlog.HookReceived, corr)
			out[i].Dedup = "payload_1"
		case 4:
			out[i] = Draft(eventlog.WaitCreated, corr)
		default:
			out[i] = Draft(eventlog.StepCompleted, corr)
		}
	}
	return out
}

// decisions returns n step_created drafts with distinct correlation ids.
func decisions(tag string, n int) []eventlog.Draft {
	out := make([]eventlog.Draft, n)
	for i := range out {
		out[i] = Draft(eventlog.StepCreated, fmt.Sprintf("%s_%03d", tag, i))
	}
	return out
}
