package local

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// The subdirectories of a world's root.
const (
	runsDir   = "runs"
	eventsDir = "events"
	keysDir   = "keys"
	locksDir  = "locks"
	tmpDir    = "tmp"
	// tokensDir is the cross-run hook token index (tokens.go): a file per
	// token held by a run that shares tokens.
	tokensDir = "tokens"
)

var layoutDirs = []string{runsDir, eventsDir, keysDir, locksDir, tmpDir, tokensDir}

// layout names the files of one world root and does the file-level work that
// every scheme shares: atomic writes, scans and JSON reads.
type layout struct {
	root string
}

func (l layout) dir(name string) string { return filepath.Join(l.root, name) }

func (l layout) runFile(runID string) string {
	return filepath.Join(l.root, runsDir, runID+".json")
}

func (l layout) counterFile(runID string) string {
	return filepath.Join(l.root, runsDir, runID+".seq")
}

// slotFile is a slot run's slot table (slottable.go).
func (l layout) slotFile(runID string) string {
	return filepath.Join(l.root, runsDir, runID+".slot")
}

func (l layout) eventDir(runID string) string {
	return filepath.Join(l.root, eventsDir, runID)
}

func (l layout) eventFile(runID, eventID string) string {
	return filepath.Join(l.root, eventsDir, runID, runID+"-"+eventID+".json")
}

func (l layout) keyDir(runID string) string {
	return filepath.Join(l.root, keysDir, runID)
}

func (l layout) keyFile(runID, hash string) string {
	return filepath.Join(l.root, keysDir, runID, hash)
}

func (l layout) lockFile(runID string) string {
	return filepath.Join(l.root, locksDir, runID+".lock")
}

// keyHash is the marker file name of an idempotency key.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// mkdirs creates the root and its subdirectories.
func (l layout) mkdirs() error {
	for _, d := range layoutDirs {
		if err := os.MkdirAll(l.dir(d), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes data to a temp file in tmp/ and renames it to path, so a
// reader sees either nothing or the whole file.
func (l layout) writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(l.dir(tmpDir), "w-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// createExclusive writes data to path via a temp file and a hard link, failing
// with fs.ErrExist if path exists: an atomic create-if-absent of a whole file.
func (l layout) createExclusive(path string, data []byte) error {
	f, err := os.CreateTemp(l.dir(tmpDir), "x-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return err
	}
	return os.Link(tmp, path)
}

// scan lists the ids of runID's events by reading the names in its events
// directory and keeping those with the run's prefix, as world-local does.
// The prefix match is exact: an event id holds no dash.
func (l layout) scan(runID string) ([]string, error) {
	d, err := os.Open(l.eventDir(runID))
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	prefix := runID + "-"
	var ids []string
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok {
			continue
		}
		id, ok := strings.CutSuffix(rest, ".json")
		if !ok || !strings.HasPrefix(id, eventlog.LocalPrefix) || strings.Contains(id, "-") {
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// readEvent reads one event file.
func (l layout) readEvent(runID, eventID string) (eventlog.Event, error) {
	var e eventlog.Event
	err := readJSON(l.eventFile(runID, eventID), &e)
	return e, err
}

// readJSON decodes the file at path into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", filepath.Base(path), err)
	}
	return nil
}

// removeIfExists removes path, treating an absent file as removed.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
