package devkitworld

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/prodlog/pgattach"
	"github.com/stormctl/stormctl/worlds"
)

// CommitTimes implements worlds.CommitTimes with the store's own clock
// (Source "store"). devkit-postgres reads pg_xact_commit_timestamp of each
// event row from its database (its cluster runs with
// track_commit_timestamp=on) through pgattach. devkit-local has no commit
// clock but the filesystem's: the modification time of each event file
// (nanoseconds on ext4 and overlayfs), written by the package just before
// the hard link that makes the file visible. Its limits: it is the time
// the file's bytes were written, an await before the link, so it can lead
// the publish by as long as Node's event loop is busy (milliseconds under
// a storm's load); it comes from the kernel's coarse clock, which ticks
// every 1 to 10 ms and so can read a little before a precise reading taken
// earlier (the event's mint time); a coarser filesystem (FAT: 2 s, HFS+:
// 1 s) ties many events.
func (w *World) CommitTimes(ctx context.Context, runID string) ([]worlds.CommitTime, error) {
	if err := w.known(ctx, runID); err != nil {
		return nil, err
	}
	var out []worlds.CommitTime
	var err error
	if w.kind == Postgres {
		out, err = w.pgCommitTimes(ctx, runID)
	} else {
		out, err = w.fileCommitTimes(runID)
	}
	// In scheme order: ulid's, by id.
	slices.SortFunc(out, func(a, b worlds.CommitTime) int { return strings.Compare(a.EventID, b.EventID) })
	return out, err
}

func (w *World) pgCommitTimes(ctx context.Context, runID string) ([]worlds.CommitTime, error) {
	return PostgresCommitTimes(ctx, w.dbURL, runID)
}

func (w *World) fileCommitTimes(runID string) ([]worlds.CommitTime, error) {
	return LocalCommitTimes(w.dataDir, runID)
}

// PostgresCommitTimes reads the commit timestamp of each event of run runID
// in the world-postgres database at url (whose server must run with
// track_commit_timestamp on), with Source "store".
func PostgresCommitTimes(ctx context.Context, url, runID string) ([]worlds.CommitTime, error) {
	var out []worlds.CommitTime
	info, err := pgattach.Read(ctx, pgattach.Options{URL: url, RunID: runID}, func(r pgattach.Run) error {
		for _, e := range r.Events {
			out = append(out, worlds.CommitTime{EventID: strings.Clone(e.ID), At: e.CommitAt, Source: "store"})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("devkit-postgres: commit times of run %s: %w", runID, err)
	}
	if !info.CommitTimestamp {
		return nil, fmt.Errorf("devkit-postgres: commit times of run %s: track_commit_timestamp is off", runID)
	}
	return out, nil
}

// LocalCommitTimes reads the modification time of each event file of run
// runID in world-local's data directory dataDir, with Source "store" (see
// World.CommitTimes for what that clock is worth).
func LocalCommitTimes(dataDir, runID string) ([]worlds.CommitTime, error) {
	dir := filepath.Join(dataDir, "events")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("devkit-local: commit times of run %s: %w", runID, err)
	}
	prefix := runID + "-"
	var out []worlds.CommitTime
	for _, e := range entries {
		name := e.Name()
		id, ok := strings.CutSuffix(strings.TrimPrefix(name, prefix), ".json")
		if !ok || !strings.HasPrefix(name, prefix) || strings.Contains(id, ".") {
			continue // another run's, a temp file, or a tagged one
		}
		fi, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("devkit-local: commit times of run %s: %w", runID, err)
		}
		out = append(out, worlds.CommitTime{EventID: id, At: fi.ModTime(), Source: "store"})
	}
	return out, nil
}
