package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// marker is one idempotency key an event claims.
type marker struct {
	key     string
	eventID string
}

// markersOf returns the keys the events claim, failing with a ConflictError
// if two events of the batch claim the same key.
func markersOf(runID string, events []eventlog.Event) ([]marker, error) {
	seen := make(map[string]bool)
	var ms []marker
	for _, e := range events {
		for _, k := range e.Draft().Keys() {
			if seen[k] {
				return nil, &eventlog.ConflictError{RunID: runID, Key: k}
			}
			seen[k] = true
			ms = append(ms, marker{key: k, eventID: e.ID})
		}
	}
	return ms, nil
}

// keysFree fails with a ConflictError naming the first key already claimed.
// Without a lock around it, this is only a snapshot.
func (l layout) keysFree(runID string, ms []marker) error {
	for _, m := range ms {
		_, err := os.Lstat(l.keyFile(runID, keyHash(m.key)))
		switch {
		case err == nil:
			return &eventlog.ConflictError{RunID: runID, Key: m.key}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	return nil
}

// claimKeys creates the marker files with O_EXCL, so a claim is atomic even
// across processes. If any key is taken it releases the markers it created and
// fails with a ConflictError. It returns the hashes it created; on an error,
// the ones it could not release (nil when it released them all).
func (l layout) claimKeys(runID string, ms []marker) ([]string, error) {
	var made []string
	for _, m := range ms {
		h := keyHash(m.key)
		f, err := os.OpenFile(l.keyFile(runID, h), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			made = append(made, h)
			_, werr := f.WriteString(m.key + "\n" + m.eventID + "\n")
			err = errors.Join(werr, f.Close())
		}
		if err != nil {
			rerr := l.releaseKeys(runID, made)
			if errors.Is(err, fs.ErrExist) {
				err = &eventlog.ConflictError{RunID: runID, Key: m.key}
			}
			if rerr != nil {
				return made, errors.Join(err, rerr)
			}
			return nil, err
		}
	}
	return made, nil
}

// orphans are key markers a failed ulid write claimed and could not
// release (the file system failed under it), per run. The write is known
// not to have happened (its rename never ran), so the markers must go:
// left alone, they would make every later write of the same fact a
// conflict, which reads as "already logged" for a fact that is not. The
// World releases them before its next claim on the run, and refuses to
// claim while it cannot.
type orphans struct {
	mu    sync.Mutex
	byRun map[string][]string
}

func (o *orphans) add(runID string, hashes []string) {
	if len(hashes) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byRun == nil {
		o.byRun = map[string][]string{}
	}
	o.byRun[runID] = append(o.byRun[runID], hashes...)
}

// release removes the run's orphaned markers, or fails with what stopped it
// (they stay for the next try).
func (o *orphans) release(l layout, runID string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	hs := o.byRun[runID]
	if len(hs) == 0 {
		return nil
	}
	if err := l.releaseKeys(runID, hs); err != nil {
		return fmt.Errorf("release the keys of an earlier failed write: %w", err)
	}
	delete(o.byRun, runID)
	return nil
}

// releaseKeys removes marker files by hash.
func (l layout) releaseKeys(runID string, hashes []string) error {
	var errs []error
	for _, h := range hashes {
		errs = append(errs, removeIfExists(l.keyFile(runID, h)))
	}
	return errors.Join(errs...)
}
