package shrink

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/tools/schedule"
)

// narrative tells schedule s, a numbered step an item: who wrote which
// event, what each invocation read and wrote, and the failing
// invocation's divergence.
func narrative(s *schedule.Schedule, prog engine.Program, failing, failure string) []string {
	run, err := s.Execute(schedule.Options{Program: prog, Lenient: true})
	if err != nil {
		return []string{"the schedule does not execute: " + err.Error()}
	}
	events := map[string]eventlog.Event{}
	names := map[string]string{} // correlation id -> step name
	for _, e := range run.Final {
		events[e.ID] = e
		if e.Type == eventlog.StepCreated {
			var p struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(e.Payload, &p) == nil {
				names[e.CorrelationID] = p.Name
			}
		}
	}
	say := func(l string) string {
		e, ok := events[l]
		if !ok {
			return l
		}
		s := l + " " + string(e.Type)
		if e.CorrelationID != "" {
			s += " " + e.CorrelationID
		}
		if n := names[e.CorrelationID]; n != "" {
			s += fmt.Sprintf(" %q", n)
		}
		return s
	}
	var steps []string
	add := func(format string, a ...any) {
		steps = append(steps, fmt.Sprintf("%d. ", len(steps)+1)+fmt.Sprintf(format, a...))
	}
	for _, it := range s.Items {
		switch it.Kind {
		case schedule.KindStart:
			add("the run starts: %s", say(it.Label))
		case schedule.KindFact:
			add("%s writes %s", it.Actor, say(it.Label))
		case schedule.KindList:
			var read []string
			for _, l := range it.Labels {
				read = append(read, say(l))
			}
			if len(read) == 0 {
				add("%s reads nothing", it.Actor)
				continue
			}
			add("%s reads %d events: %s", it.Actor, len(read), strings.Join(read, ", "))
		case schedule.KindListErr:
			add("%s's read fails: %s", it.Actor, it.Err)
		case schedule.KindWrite:
			var wrote []string
			for _, l := range it.Labels {
				if l != schedule.Skip {
					wrote = append(wrote, say(l))
				}
			}
			add("%s replays what it read and writes %s", it.Actor, strings.Join(wrote, ", "))
		case schedule.KindFail:
			if it.Actor == failing {
				add("%s replays what it read and the engine raises: %s", it.Actor, failure)
			} else {
				add("%s writes %s", it.Actor, say(it.Label))
			}
		}
	}
	return steps
}
