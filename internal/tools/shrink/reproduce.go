package shrink

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/tools/schedule"
	"github.com/stormctl/stormctl/scenarios"
)

// Reproduction is a schedule's divergence: the error the engine raised
// when its failing invocation's reads were replayed.
type Reproduction struct {
	Actor      string
	Divergence string
}

func (r *Reproduction) Error() string {
	return fmt.Sprintf("%s's replay raises: %s", r.Actor, r.Divergence)
}

// Reproduce executes a schedule stormctl shrink wrote (strictly: every
// write derives what it is labelled with) with its scenario's program and
// replays each invocation that writes a run_failed. It returns a
// *Reproduction with the first one's divergence when it is the recorded
// one (the schedule's detail; the engine still raises it), nil when none
// diverges, or an error: the schedule cannot be executed, names no
// failing invocation (nothing to reproduce is never a pass), or diverges
// otherwise than recorded.
func Reproduce(ctx context.Context, text string) error {
	s, err := schedule.Parse(text)
	if err != nil {
		return fmt.Errorf("parse the schedule: %w", err)
	}
	sc, err := scenarios.Lookup(s.Scenario)
	if err != nil {
		return fmt.Errorf("the schedule's scenario: %w", err)
	}
	run, err := s.Execute(schedule.Options{Program: sc.Program})
	if err != nil {
		return fmt.Errorf("execute the schedule: %w", err)
	}
	failing := 0
	var other []string
	for _, it := range s.Items {
		if it.Kind != schedule.KindFail {
			continue
		}
		failing++
		d, err := divergence(ctx, run, sc.Program, it.Actor)
		if err != nil {
			return fmt.Errorf("replay %s: %w", it.Actor, err)
		}
		switch {
		case d == nil:
		case s.Detail == "" || d.Error == s.Detail:
			return &Reproduction{Actor: it.Actor, Divergence: d.Error}
		default:
			other = append(other, it.Actor+": "+d.Error)
		}
	}
	switch {
	case failing == 0:
		return errors.New("the schedule names no failing invocation: there is nothing to reproduce")
	case other != nil:
		return fmt.Errorf("the schedule diverges otherwise than recorded (%q): %s", s.Detail, strings.Join(other, "; "))
	}
	return nil
}
