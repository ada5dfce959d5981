package local

import (
	"context"
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// serializer is the per-run append serializer of the seq scheme: an
// in-process semaphore per run (so waiting honours ctx and goroutines of one
// process queue cheaply) in front of an exclusive flock on the run's lock file
// (so other processes, or other Worlds on the same directory, are excluded
// too). Each acquisition opens the lock file anew: flock locks belong to an
// open file description, so two descriptions exclude each other even inside
// one process.
type serializer struct {
	fs   layout
	mu   sync.Mutex
	sems map[string]chan struct{}
}

func newSerializer(l layout) *serializer {
	return &serializer{fs: l, sems: make(map[string]chan struct{})}
}

func (s *serializer) sem(runID string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.sems[runID]
	if !ok {
		c = make(chan struct{}, 1)
		s.sems[runID] = c
	}
	return c
}

// lock takes runID's serializer and returns the function that releases it.
// Waiting for the in-process semaphore honours ctx; waiting for another
// process's flock does not (holders keep it for a few file writes).
func (s *serializer) lock(ctx context.Context, runID string) (unlock func() error, err error) {
	sem := s.sem(runID)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f, err := os.OpenFile(s.fs.lockFile(runID), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		<-sem
		return nil, err
	}
	fd := int(f.Fd())
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		<-sem
		return nil, err
	}
	return func() error {
		uerr := unix.Flock(fd, unix.LOCK_UN)
		cerr := f.Close()
		<-sem
		return errors.Join(uerr, cerr)
	}, nil
}
