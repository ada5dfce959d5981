package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/worlds"
)

// Name is the world's registry name.
const Name = "local"

// World is the filesystem world. It is safe for concurrent use, and several
// Worlds (in one process or several) may share one directory.
type World struct {
	fs      layout
	latency worlds.Profile
	mint    *eventlog.Minter
	locks   *serializer
	cache   eventCache
	closed  atomic.Bool
	// nemesis: opened for fault injection (worlds.Options.Nemesis).
	nemesis bool
	// orphans are keys failed ulid writes left claimed.
	orphans orphans
}

var (
	_ worlds.World       = (*World)(nil)
	_ worlds.Resetter    = (*World)(nil)
	_ worlds.CommitTimes = (*World)(nil)
	_ worlds.Dumper      = (*World)(nil)
)

// Register adds the local world to r.
func Register(r *worlds.Registry) { r.Register(Entry()) }

// Package is the local world as stormctl builds it in: no endpoint, nothing
// started.
var Package = worlds.Package{Register: func(r *worlds.Registry, _ worlds.Setup, _ *slog.Logger) func() error {
	Register(r)
	return func() error { return nil }
}}

// Entry describes the local world: the registry's entry, and what a test
// hands the conformance suite (worldtest.Exercise). Its Open needs
// Options.Dir.
func Entry() worlds.Entry {
	return worlds.Entry{
		Name:        Name,
		Description: "filesystem: one JSON file per event in a directory (world-local layout); seq and slot through a flock append serializer",
		Schemes:     []string{string(eventlog.SchemeULID), string(eventlog.SchemeSeq), string(eventlog.SchemeSlot)},
		Faults:      []nemesis.Kind{nemesis.FSUnavailable},
		HookClaims:  true,
		Open: func(ctx context.Context, opts worlds.Options) (worlds.World, error) {
			w, err := Open(ctx, opts)
			if err != nil {
				return nil, err
			}
			return w, nil
		},
	}
}

// Open opens the world rooted at opts.Dir, creating the directory and its
// layout if needed. opts.Latency shapes each write's mint-to-commit window
// (nil: none); opts.Seed seeds the ULID entropy. Two Worlds sharing a
// directory should use different seeds, or they may mint the same ids.
func Open(ctx context.Context, opts worlds.Options) (*World, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		return nil, errors.New("local: Options.Dir is empty: the local world needs a directory")
	}
	root, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("local: resolve %s: %w", opts.Dir, err)
	}
	l := layout{root: root}
	if err := l.mkdirs(); err != nil {
		return nil, storeErr("create layout in "+root, err)
	}
	entropy := &pcgReader{src: rand.NewPCG(opts.Seed, 0x10ca1)}
	return &World{
		fs:      l,
		latency: worlds.ProfileOrNone(opts.Latency),
		mint:    eventlog.NewMinter(eventlog.LocalPrefix, entropy),
		locks:   newSerializer(l),
		nemesis: opts.Nemesis,
	}, nil
}

// Dir returns the world's root directory.
func (w *World) Dir() string { return w.fs.root }

// Append writes facts unfenced. Under ulid the drafts are written one by one
// and a failure returns the events written before it; under seq the batch
// commits all or nothing; under slot it is Reserve, the latency window and
// Commit (worlds.Slotter).
func (w *World) Append(ctx context.Context, runID string, d []eventlog.Draft) ([]eventlog.Event, error) {
	run, err := w.prepare(ctx, runID, d)
	if err != nil || len(d) == 0 {
		return nil, err
	}
	switch run.Scheme {
	case eventlog.SchemeULID:
		return w.appendULID(ctx, run, d)
	case eventlog.SchemeSlot:
		return w.appendSlot(ctx, run, d, fence{})
	}
	return w.appendSeq(ctx, run, d, fence{})
}

// AppendFenced writes a batch of decisions if the log is where the writer
// expects it (expectedSeq: the number of events it loaded), failing with an
// *eventlog.FencedError otherwise. Under ulid the fence is the legacy guard:
// count the run's files, then check the batch's keys, then write (best effort,
// fence basis ignored). Under seq the fence is evaluated under the run's
// serializer against the committed counter and the batch is atomic; with
// eventlog.FenceOnDecisions only fenced appends move the fence, and a
// rejection's Actual is the position of the last fenced event. Under slot
// the fence is evaluated at reservation, under the serializer, against the
// run's slot counter (slots handed out, committed or not), or under
// eventlog.FenceInBand against the run's in-band count.
func (w *World) AppendFenced(ctx context.Context, runID string, expectedSeq int64, d []eventlog.Draft) ([]eventlog.Event, error) {
	run, err := w.prepare(ctx, runID, d)
	if err != nil || len(d) == 0 {
		return nil, err
	}
	switch run.Scheme {
	case eventlog.SchemeULID:
		return w.appendFencedULID(ctx, run, expectedSeq, d)
	case eventlog.SchemeSlot:
		return w.appendSlot(ctx, run, d, fence{on: true, expected: expectedSeq, basis: run.FenceBasis})
	}
	return w.appendSeq(ctx, run, d, fence{on: true, expected: expectedSeq, basis: run.FenceBasis})
}

// List returns up to limit events after the cursor in the run's scheme order
// (limit <= 0: all of them). Under seq it asserts density and fails with
// eventlog.ErrGap or eventlog.ErrDuplicate; under slot it returns committed
// events and noops, never a reservation, and fails with an
// *eventlog.HoleError at an empty slot below a filled one.
func (w *World) List(ctx context.Context, runID string, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	run, err := w.prepare(ctx, runID, nil)
	if err != nil {
		return eventlog.Page{}, err
	}
	switch run.Scheme {
	case eventlog.SchemeULID:
		return w.listULID(runID, after, limit)
	case eventlog.SchemeSlot:
		return w.listSlot(run, after, limit)
	}
	return w.listSeq(runID, after, limit)
}

// CommitTimes implements worlds.CommitTimes with the commit times the world
// observed on its own clock (Source "world") and stored in each event file:
// under ulid the time just before the file's rename, under seq (and slot)
// the time the batch was written under the serializer, just before its
// counter (table) rename. Under slot it fails with the HoleError List does.
func (w *World) CommitTimes(ctx context.Context, runID string) ([]worlds.CommitTime, error) {
	p, err := w.List(ctx, runID, eventlog.Cursor{}, 0)
	if err != nil {
		return nil, err
	}
	out := make([]worlds.CommitTime, len(p.Events))
	for i, e := range p.Events {
		out[i] = worlds.CommitTime{EventID: e.ID, Seq: e.Seq, At: e.CommittedAt, Source: "world"}
	}
	return out, nil
}

// Reset removes everything inside the world's directory (never the directory
// itself nor anything outside it) and lays out an empty world. It must not
// run concurrently with other operations.
func (w *World) Reset(ctx context.Context) error {
	if err := w.usable(ctx); err != nil {
		return err
	}
	w.cache.clear()
	entries, err := os.ReadDir(w.fs.root)
	if err != nil {
		return storeErr("reset", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(w.fs.root, e.Name())); err != nil {
			return storeErr("reset", err)
		}
	}
	if err := w.fs.mkdirs(); err != nil {
		return storeErr("reset", err)
	}
	return nil
}

// Close marks the world closed; the files stay for forensics (Reset removes
// them). Later operations fail.
func (w *World) Close() error {
	w.closed.Store(true)
	return nil
}

func (w *World) usable(ctx context.Context) error {
	if w.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}
