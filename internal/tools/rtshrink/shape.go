package rtshrink

import (
	"encoding/json"
	"fmt"
)

// shape is what well-formedness looks at in a log: each event's type and
// entity.
type shape struct {
	types, entities []string
	// resumeAt is a wait event's resumeAt as stored ("" for others).
	resumeAt []string
}

func shapeOf(c Case) (shape, error) {
	var s shape
	type event struct {
		EventType     string `json:"eventType"`
		CorrelationID string `json:"correlationId"`
		EventData     struct {
			ResumeAt json.RawMessage `json:"resumeAt"`
		} `json:"eventData"`
	}
	for _, raw := range c.Log {
		var e event
		if err := json.Unmarshal(raw, &e); err != nil {
			return s, fmt.Errorf("shrink %s: an event of the log: %w", c.RunID, err)
		}
		s.types = append(s.types, e.EventType)
		s.entities = append(s.entities, e.CorrelationID)
		s.resumeAt = append(s.resumeAt, string(e.EventData.ResumeAt))
	}
	return s, nil
}

// creations are the events that create an entity.
var creations = map[string]bool{"step_created": true, "wait_created": true, "hook_created": true}

// wellFormed says the log of the events at keep is one a store could
// hold, defects of the kind under study aside: the run_created is there,
// every event of an entity (a step's start or result, a wait's
// completion, a hook's payload or disposal) follows a creation of it, and
// a wait's completion follows the creation it completes (the runtime
// copies that wait_created's resumeAt into it). A shrink that dropped a
// wait_created and kept its wait_completed would keep a divergence for a
// reason no World produces; duplicates (the world defect) stay possible.
func (s shape) wellFormed(keep []int) bool {
	created := map[string]bool{}
	waits := map[string]bool{}
	run := false
	for _, i := range keep {
		t, ent := s.types[i], s.entities[i]
		switch {
		case t == "run_created":
			run = true
		case creations[t]:
			created[ent] = true
			if t == "wait_created" {
				waits[ent+" "+s.resumeAt[i]] = true
			}
		case ent != "" && !created[ent]:
			return false
		case t == "wait_completed" && !waits[ent+" "+s.resumeAt[i]]:
			return false
		}
	}
	return run || !s.hasRunCreated()
}

func (s shape) hasRunCreated() bool {
	for _, t := range s.types {
		if t == "run_created" {
			return true
		}
	}
	return false
}
