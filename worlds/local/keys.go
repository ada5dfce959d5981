package local

import (
	"errors"
	"io/fs"
	"os"

	"github.com/stormctl/stormctl/eventlog"
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
// fails with a ConflictError. It returns the hashes it created.
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
				return nil, errors.Join(err, rerr)
			}
			return nil, err
		}
	}
	return made, nil
}

// releaseKeys removes marker files by hash.
func (l layout) releaseKeys(runID string, hashes []string) error {
	var errs []error
	for _, h := range hashes {
		errs = append(errs, removeIfExists(l.keyFile(runID, h)))
	}
	return errors.Join(errs...)
}
