package postgres

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/nemesis"
)

// Outage crashes the cluster (Crash), keeps it down for d (less if ctx ends
// first) and restarts it (Restart, on a context of its own, so that a
// storm ending mid-outage still gets its server back). It says how long
// crash recovery and the restart took.
func (c *Cluster) Outage(ctx context.Context, d time.Duration) (string, error) {
	c.faultMu.Lock()
	defer c.faultMu.Unlock()
	if err := c.Crash(); err != nil {
		return "", err
	}
	_ = clock.Sleep(ctx, d) // ctx ending early cuts the outage short
	hctx, cancel := nemesis.Heal(ctx, 2*time.Minute)
	defer cancel()
	began := time.Now()
	if err := c.Restart(hctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("down %s, restart with crash recovery %s", d, time.Since(began).Round(time.Millisecond)), nil
}

// Crash kills the cluster the way a power cut would: SIGKILL to the
// postmaster and every process of its process group (its backends and
// auxiliary processes, none of which gets to clean up), then waits until
// they are gone. Nothing committed is lost (fsync is on); transactions in
// flight are. Restart brings the cluster back.
func (c *Cluster) Crash() error {
	pid, shmID, err := c.postmaster()
	if err != nil {
		return fmt.Errorf("postgres: crash: %w", err)
	}
	target := pid
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		target = -pid // pg_ctl starts the postmaster in a session of its own
	}
	if err := syscall.Kill(target, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("postgres: crash: kill %d: %w", target, err)
	}
	if err := waitGone(pid, 30*time.Second); err != nil {
		return fmt.Errorf("postgres: crash: %w", err)
	}
	// The dead postmaster's System V segment has no one attached any more:
	// remove it, and the lock files that name the dead postmaster, so the
	// restarted one does not take a zombie postmaster (this process's init
	// may not reap) for a live one.
	if shmID >= 0 {
		_, _ = unix.SysvShmCtl(shmID, unix.IPC_RMID, nil)
	}
	for _, lock := range []string{filepath.Join(c.dataDir(), "postmaster.pid"), filepath.Join(c.sockDir(), fmt.Sprintf(".s.PGSQL.%d.lock", c.port))} {
		if err := os.Remove(lock); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("postgres: crash: %w", err)
		}
	}
	return nil
}

// Restart starts a crashed cluster again on its port; pg_ctl waits until
// crash recovery is done and the server accepts connections.
func (c *Cluster) Restart(ctx context.Context) error {
	err := c.run(ctx, c.bin.pgctl, "start", "-D", c.dataDir(), "-l", c.logFile(), "-w", "-t", "60",
		"-o", "-p "+strconv.Itoa(c.port))
	if err != nil {
		return fmt.Errorf("postgres: restart after a crash: %w%s", err, c.logTail())
	}
	return nil
}

// postmaster reads the running postmaster's pid and its System V shared
// memory id (-1 if none) from postmaster.pid.
func (c *Cluster) postmaster() (pid, shmID int, err error) {
	f, err := os.Open(filepath.Join(c.dataDir(), "postmaster.pid"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	if len(lines) == 0 {
		return 0, 0, errors.New("postmaster.pid is empty")
	}
	if pid, err = strconv.Atoi(lines[0]); err != nil || pid <= 0 {
		return 0, 0, fmt.Errorf("postmaster.pid: bad pid %q", lines[0])
	}
	shmID = -1
	if len(lines) > 6 { // line 7: shared memory key and id
		if f := strings.Fields(lines[6]); len(f) == 2 {
			if id, err := strconv.Atoi(f[1]); err == nil {
				shmID = id
			}
		}
	}
	return pid, shmID, nil
}

// waitGone waits until no live process is left in pid's process group (a
// zombie is dead), or fails after timeout.
func waitGone(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		live, err := groupAlive(pid)
		if err != nil || !live {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of postmaster %d still alive after %s", pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupAlive reports whether a process of group pgid (or pgid itself) is
// alive and not a zombie, from /proc; without /proc, whether the group can
// still be signalled.
func groupAlive(pgid int) (bool, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		err := syscall.Kill(-pgid, 0)
		return err == nil || errors.Is(err, syscall.EPERM), nil
	}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if grp, _ := strconv.Atoi(f[2]); grp == pgid || p == pgid {
			return true, nil
		}
	}
	return false, nil
}
