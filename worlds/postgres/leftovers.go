package postgres

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stormctl/stormctl/internal/base/leftover"
)

// SweepLeftovers removes the directories of embedded clusters whose
// stormctl was killed and whose watcher is gone too (a reboot, or the
// watcher killed as well): a server still running in one is shut down
// first. A cluster whose watcher lives is left to it (it stops the server
// and removes the directory within seconds of its owner's death).
func SweepLeftovers() ([]leftover.Removed, error) {
	var removed []leftover.Removed
	var errs []error
	for _, base := range slices.Compact([]string{os.TempDir(), "/tmp"}) {
		if _, err := os.Stat(base); err != nil {
			continue
		}
		r, err := leftover.Sweep(base, leftover.KindPostgres, stopOrphan)
		removed, errs = append(removed, r...), append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// stopOrphan shuts down the server still running on an abandoned
// cluster's data directory, if one is (SIGQUIT: immediate shutdown; its
// backends exit with it), and waits for it to exit.
func stopOrphan(dir string) error {
	data := filepath.Join(dir, "data")
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return nil // never started, or shut down cleanly
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return nil
	}
	serving, err := servesDir(pid, data)
	if err != nil || !serving {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop its server (pid %d): %w", pid, err)
	}
	for range 150 {
		if serving, _ := servesDir(pid, data); !serving {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("its server (pid %d) did not stop", pid)
}

// servesDir reports whether process pid is a server on data: its command
// line (pg_ctl starts it as postgres -D DATA) names the directory. Without
// /proc a live pid cannot be told from a reused one: an error keeps the
// directory.
func servesDir(pid int, data string) (bool, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err == nil {
		return strings.Contains(string(b), data), nil
	}
	if _, serr := os.Stat("/proc/self/cmdline"); serr == nil || !leftover.Alive(leftover.Proc{PID: pid}) {
		return false, nil // /proc works and pid is gone, or pid is gone
	}
	return false, fmt.Errorf("pid %d of its postmaster.pid runs and cannot be told from a reused pid", pid)
}
