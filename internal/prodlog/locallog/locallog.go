// Package locallog reads one run's log from a data directory of the
// published @workflow/world-local, as the package lays it out (read from
// its dist, 4.4.1 and the 5.0 betas alike): each event a JSON file
// <dir>/events/<runId>-<eventId>[.<tag>].json holding the event as the
// package stores it (byte arrays as {"__type":"Uint8Array","data":base64}),
// each run <dir>/runs/<runId>[.<tag>].json with its workflowName and
// status. The package lists a run's events by id (its ULID or dense slot
// id), which is the order Read returns. Nothing is written.
package locallog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/prodlog"
	"github.com/stormctl/stormctl/worlds/devkitworld"
)

// ErrNoDir is returned for a directory that holds no events/ directory.
var ErrNoDir = errors.New("not a world-local data directory")

// Read reads run runID's log from the world-local data directory dir.
func Read(dir, runID string) (prodlog.Log, error) {
	log := prodlog.Log{RunID: runID, Source: dir, World: devkitworld.LocalName}
	if strings.ContainsAny(runID, `/\`) || runID == "" || strings.HasPrefix(runID, ".") {
		return log, fmt.Errorf("run %q: not a run id", runID)
	}
	eventsDir := filepath.Join(dir, "events")
	entries, err := os.ReadDir(eventsDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return log, fmt.Errorf("%s: %w (no events/ directory)", dir, ErrNoDir)
		}
		return log, fmt.Errorf("read %s: %w", eventsDir, err)
	}
	hasRun, err := readRun(dir, runID, &log)
	if err != nil {
		return log, err
	}
	_, named := devkitworld.ScenarioOf(log.Workflow)
	stormctls := named || !hasRun || log.Workflow == devkitworld.WorkflowName("")
	prefix := runID + "-"
	for _, ent := range entries {
		name := ent.Name()
		if ent.IsDir() || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".json") {
			continue
		}
		e, err := readEvent(filepath.Join(eventsDir, name), runID, stormctls)
		if err != nil {
			return log, err
		}
		log.Events = append(log.Events, e)
	}
	slices.SortStableFunc(log.Events, func(a, b eventlog.Event) int { return strings.Compare(a.ID, b.ID) })
	if !hasRun && len(log.Events) == 0 {
		return log, fmt.Errorf("run %s: %w in %s", runID, prodlog.ErrNoRun, dir)
	}
	return log, nil
}

// readRun reads the run's file, untagged or tagged, into log.
func readRun(dir, runID string, log *prodlog.Log) (bool, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "runs", runID+"*.json"))
	if err != nil {
		return false, err
	}
	for _, m := range matches {
		base := strings.TrimSuffix(filepath.Base(m), ".json")
		if base != runID && !strings.HasPrefix(base, runID+".") {
			continue
		}
		b, err := os.ReadFile(m)
		if err != nil {
			return false, fmt.Errorf("read the run file: %w", err)
		}
		var r struct {
			WorkflowName string `json:"workflowName"`
			Status       string `json:"status"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return false, fmt.Errorf("%s: %w", m, err)
		}
		log.Workflow, log.Status = r.WorkflowName, r.Status
		return true, nil
	}
	return false, nil
}

// readEvent reads one event file: mapped onto what stormctl wrote when
// stormctls, else as the package holds it; Package is the file's event.
func readEvent(path, runID string, stormctls bool) (eventlog.Event, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("read %s: %w", path, err)
	}
	var pe struct {
		EventID       string          `json:"eventId"`
		RunID         string          `json:"runId"`
		EventType     string          `json:"eventType"`
		CorrelationID string          `json:"correlationId"`
		EventData     json.RawMessage `json:"eventData"`
	}
	if err := json.Unmarshal(b, &pe); err != nil {
		return eventlog.Event{}, fmt.Errorf("%s: %w", path, err)
	}
	if pe.RunID != runID || pe.EventID == "" || pe.EventType == "" {
		return eventlog.Event{}, fmt.Errorf("%s: not an event of run %s (runId %q, eventId %q, eventType %q)", path, runID, pe.RunID, pe.EventID, pe.EventType)
	}
	e, err := devkitworld.EventOf(runID, pe.EventID, pe.EventType, pe.CorrelationID, pe.EventData)
	if err != nil && !stormctls {
		e, err = eventlog.Event{RunID: runID, ID: pe.EventID, Type: eventlog.Type(pe.EventType), CorrelationID: pe.CorrelationID, Payload: pe.EventData}, nil
	}
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("run %s: %w", runID, err)
	}
	var compact json.RawMessage
	if compact, err = compactJSON(b); err != nil {
		return eventlog.Event{}, fmt.Errorf("%s: %w", path, err)
	}
	e.Package = compact
	return e, nil
}

// compactJSON is b without insignificant space (the package writes its
// files indented).
func compactJSON(b []byte) (json.RawMessage, error) {
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	out, err := json.Marshal(v)
	return out, err
}
