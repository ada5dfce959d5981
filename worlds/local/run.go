package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// CreateRun records the run and the scheme stamped on it. Runs are ulid, seq
// or slot; creating an existing run fails with eventlog.ErrConflict.
func (w *World) CreateRun(ctx context.Context, r eventlog.Run) error {
	if err := w.usable(ctx); err != nil {
		return err
	}
	if !validRunID(r.ID) {
		return fmt.Errorf("local: create run %q: invalid run id (want 1 to 200 letters, digits, '_' or '-')", r.ID)
	}
	if !supported(r.Scheme) {
		return fmt.Errorf("local: create run %s: scheme %q not supported (valid: ulid, seq, slot)", r.ID, r.Scheme)
	}
	if err := r.CheckFenceBasis(); err != nil {
		return fmt.Errorf("local: create run %s: %w", r.ID, err)
	}
	if err := r.CheckHookClaim(); err != nil {
		return fmt.Errorf("local: create run %s: %w", r.ID, err)
	}
	if r.Guard != eventlog.GuardNone {
		return fmt.Errorf("local: create run %s: guard %q not supported (this world has no legacy guard)", r.ID, r.Guard)
	}
	for _, dir := range []string{w.fs.keyDir(r.ID), w.fs.eventDir(r.ID)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return storeErr("create run "+r.ID, err)
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("local: create run %s: %w", r.ID, err)
	}
	if err := w.fs.createExclusive(w.fs.runFile(r.ID), data); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("local: create run %s: run exists: %w", r.ID, eventlog.ErrConflict)
		}
		return storeErr("create run "+r.ID, err)
	}
	return nil
}

// prepare checks the world and the drafts and loads the run record.
func (w *World) prepare(ctx context.Context, runID string, d []eventlog.Draft) (eventlog.Run, error) {
	if err := w.usable(ctx); err != nil {
		return eventlog.Run{}, err
	}
	run, err := w.loadRun(runID)
	if err != nil {
		return eventlog.Run{}, err
	}
	for i, x := range d {
		if !x.Type.Valid() {
			return run, fmt.Errorf("local: run %s: draft %d: unknown event type %q", runID, i, x.Type)
		}
		if len(x.Payload) > 0 && !json.Valid(x.Payload) {
			return run, fmt.Errorf("local: run %s: draft %d (%s): payload is not valid JSON", runID, i, x.Type)
		}
	}
	return run, nil
}

// loadRun reads the run record; an invalid or unknown id is eventlog.ErrNoRun.
func (w *World) loadRun(runID string) (eventlog.Run, error) {
	if !validRunID(runID) {
		return eventlog.Run{}, fmt.Errorf("local: run %q: invalid run id: %w", runID, eventlog.ErrNoRun)
	}
	var r eventlog.Run
	err := readJSON(w.fs.runFile(runID), &r)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return r, fmt.Errorf("local: run %s: %w", runID, eventlog.ErrNoRun)
	case err != nil:
		return r, storeErr("read run "+runID, err)
	case !supported(r.Scheme):
		return r, fmt.Errorf("local: run %s: record names unsupported scheme %q", runID, r.Scheme)
	}
	return r, nil
}

// supported reports whether this world keeps runs of scheme s.
func supported(s eventlog.Scheme) bool {
	return s == eventlog.SchemeULID || s == eventlog.SchemeSeq || s == eventlog.SchemeSlot
}

// validRunID reports whether id can name a run's files: 1 to 200 ASCII
// letters, digits, '_' or '-', so it cannot escape the layout.
func validRunID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}
