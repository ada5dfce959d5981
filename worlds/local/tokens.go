package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// tokenLock names the serializer entry of the cross-run token index: not a
// valid run id, so no run's lock file is it.
const tokenLock = "~tokens"

// tokenFile is the index entry of a hook token: the hook that holds it.
func (l layout) tokenFile(token string) string {
	return filepath.Join(l.root, tokensDir, keyHash("hook_token/"+token))
}

// writeClaimULID writes a hook_created of a run that shares tokens
// (eventlog.Run.HookClaim): mint, spend the window, then under the world's
// token lock read the token's holder, decide (eventlog.ClaimToken), write
// the claimer's event (the hook_created, or the hook_conflict in its
// place), on a takeover the holder run's hook_disposed{forceClaimedBy},
// and name the claimer in the index. The holder's disposal claims the
// same marker its own hook_disposed would, so a run that disposes of the
// hook itself meanwhile leaves the takeover nothing to tell it.
func (w *World) writeClaimULID(ctx context.Context, run eventlog.Run, d eventlog.Draft) (eventlog.Event, error) {
	e := w.newEvent(run.ID, d)
	if err := worlds.SpendWindow(ctx, w.latency, w.latency.Delay(d.Type)); err != nil {
		return eventlog.Event{}, err
	}
	unlock, err := w.locks.lock(ctx, tokenLock)
	if err != nil {
		return eventlog.Event{}, fmt.Errorf("lock the token index: %w", err)
	}
	defer func() { _ = unlock() }()
	holder, err := w.tokenHolder(d.Token)
	if err != nil {
		return eventlog.Event{}, err
	}
	live := false
	if holder != nil {
		if live, err = w.hookLive(*holder); err != nil {
			return eventlog.Event{}, err
		}
	}
	claim := eventlog.ClaimToken(run.HookClaim, run.ID, d, holder, live)
	written, victim := claim.Apply(run.ID, d)
	e.Type, e.Payload = written.Type, written.Payload
	if err := w.commitULID(run.ID, &e); err != nil {
		return eventlog.Event{}, err
	}
	if claim.Kind == eventlog.ClaimConflict {
		return e, nil
	}
	if victim != nil {
		ve := w.newEvent(claim.Holder.RunID, *victim)
		err := w.commitULID(claim.Holder.RunID, &ve)
		if err != nil && !errors.Is(err, eventlog.ErrConflict) {
			return e, fmt.Errorf("hook %s took token %q, and telling run %s: %w", d.CorrelationID, d.Token, claim.Holder.RunID, err)
		}
	}
	data, err := json.Marshal(eventlog.HookRef{RunID: run.ID, HookID: d.CorrelationID})
	if err == nil {
		err = w.fs.writeAtomic(w.fs.tokenFile(d.Token), data)
	}
	if err != nil {
		return e, fmt.Errorf("index token %q: %w", d.Token, err)
	}
	return e, nil
}

// commitULID claims e's keys and writes its file through tmp/, renamed into
// events/: the file holds the commit time observed just before the rename,
// and e.CommittedAt is set again just after it, when the event became
// visible. A failed write releases the keys it claimed (or leaves them to
// the run's orphans, released before its next write).
func (w *World) commitULID(runID string, e *eventlog.Event) error {
	ms, err := markersOf(runID, []eventlog.Event{*e})
	if err != nil {
		return err
	}
	if err := w.orphans.release(w.fs, runID); err != nil {
		return err
	}
	hashes, err := w.fs.claimKeys(runID, ms)
	if err != nil {
		w.orphans.add(runID, hashes)
		return err
	}
	e.CommittedAt = time.Now()
	data, err := json.Marshal(e)
	if err == nil {
		err = w.fs.writeAtomic(w.fs.eventFile(runID, e.ID), data)
	}
	if err != nil {
		if rerr := w.fs.releaseKeys(runID, hashes); rerr != nil {
			w.orphans.add(runID, hashes)
			err = fmt.Errorf("%w (and releasing its keys, retried before the run's next write: %v)", err, rerr)
		}
		return fmt.Errorf("write event %s: %w", e.ID, err)
	}
	e.CommittedAt = time.Now()
	return nil
}

// tokenHolder reads the token's index entry (nil: none).
func (w *World) tokenHolder(token string) (*eventlog.HookRef, error) {
	var h eventlog.HookRef
	err := readJSON(w.fs.tokenFile(token), &h)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the index entry of token %q: %w", token, err)
	}
	return &h, nil
}

// hookLive reports whether h still holds its token: none of its run's
// liveness keys (its hook_disposed, the run's end) is claimed.
func (w *World) hookLive(h eventlog.HookRef) (bool, error) {
	for _, k := range eventlog.LivenessKeys(h.HookID) {
		_, err := os.Lstat(w.fs.keyFile(h.RunID, keyHash(k)))
		switch {
		case err == nil:
			return false, nil
		case !errors.Is(err, fs.ErrNotExist):
			return false, fmt.Errorf("read run %s's key %s: %w", h.RunID, k, err)
		}
	}
	return true, nil
}
