// Package leftover finds and removes what a killed stormctl left behind.
//
// A stormctl process claims each temp directory it creates (a storm's
// worlds, an embedded PostgreSQL cluster) by writing an owner file into it
// (Claim): its pid, the process's start time and the kernel's boot id, and
// the helper processes meant to outlive it (the cluster's watcher). A
// process killed outright (kill -9, a reboot) cannot remove its
// directories, so the next stormctl that starts a storm removes every
// claimed directory whose owner and helpers are gone (Sweep). A directory
// without an owner file, of another kind, or claimed from another PID
// namespace (whose processes cannot be seen from here) is never touched.
package leftover

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// OwnerFile is the owner file's name inside a claimed directory.
const OwnerFile = ".stormctl-owner"

// Prefix starts the name of every temp directory stormctl creates; Sweep
// looks only at these.
const Prefix = "stormctl-"

// Kinds of claimed directories: each is swept by the code that knows what
// may still run in it.
const (
	KindStorm    = "storm"    // a storm's worlds (storm.Run)
	KindPostgres = "postgres" // an embedded PostgreSQL cluster
	KindBench    = "bench"    // a benchmark's files
)

// Proc names a process: its pid and start time (clock ticks after boot,
// 0 where unknown), so that a pid reused by another process is not taken
// for it.
type Proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
}

// Owner is an owner file: who claimed the directory.
type Owner struct {
	Kind string `json:"kind"`
	Proc
	// Boot is the kernel's boot id: after a reboot every owner is gone.
	Boot string `json:"boot,omitempty"`
	// PIDNS is the owner's PID namespace.
	PIDNS string `json:"pidns,omitempty"`
	// Helpers are processes the owner started to outlive it.
	Helpers []Proc `json:"helpers,omitempty"`
}

// Claim writes dir's owner file naming this process as its owner, and
// helpers (pids) as processes meant to outlive it.
func Claim(dir, kind string, helpers ...int) error {
	o := Owner{Kind: kind, Proc: self(os.Getpid()), Boot: bootID(), PIDNS: pidNS()}
	for _, pid := range helpers {
		o.Helpers = append(o.Helpers, self(pid))
	}
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("claim %s: %w", dir, err)
	}
	tmp := filepath.Join(dir, OwnerFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("claim %s: %w", dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, OwnerFile)); err != nil {
		return fmt.Errorf("claim %s: %w", dir, err)
	}
	return nil
}

// self names process pid as it runs now.
func self(pid int) Proc {
	start, _ := startTime(pid)
	return Proc{PID: pid, Start: start}
}

// Removed is a directory Sweep removed and the owner that left it.
type Removed struct {
	Dir   string
	Owner Owner
}

// Sweep removes the directories directly under base, named Prefix*, that
// were claimed as kind by a process that is gone, along with every helper
// it named. stop, when not nil, is called before a directory is removed to
// end what may still run in it; it returns an error to keep the directory.
// Sweep returns the directories it removed, and joins the errors of those
// it could not.
func Sweep(base, kind string, stop func(dir string) error) ([]Removed, error) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("look for leftovers in %s: %w", base, err)
	}
	var removed []Removed
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), Prefix) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		o, ok := readOwner(dir)
		if !ok || o.Kind != kind || !o.gone() {
			continue
		}
		if stop != nil {
			if err := stop(dir); err != nil {
				errs = append(errs, fmt.Errorf("leftover %s of pid %d: %w", dir, o.PID, err))
				continue
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove leftover %s of pid %d: %w", dir, o.PID, err))
			continue
		}
		removed = append(removed, Removed{Dir: dir, Owner: o})
	}
	return removed, errors.Join(errs...)
}

func readOwner(dir string) (Owner, bool) {
	b, err := os.ReadFile(filepath.Join(dir, OwnerFile))
	if err != nil {
		return Owner{}, false
	}
	var o Owner
	if json.Unmarshal(b, &o) != nil || o.PID <= 0 {
		return Owner{}, false
	}
	return o, true
}

// gone reports whether the owner and all its helpers are surely gone: the
// machine rebooted since, or none of them runs any more. An owner in
// another PID namespace is never gone: its processes cannot be seen.
func (o Owner) gone() bool {
	if o.PIDNS != "" && o.PIDNS != pidNS() {
		return false
	}
	if boot := bootID(); o.Boot != "" && boot != "" && o.Boot != boot {
		return true
	}
	for _, p := range append([]Proc{o.Proc}, o.Helpers...) {
		if Alive(p) {
			return false
		}
	}
	return true
}

// Alive reports whether process p still runs: its pid exists, is not a
// zombie (dead, not yet reaped) and, when both are known, has p's start
// time. Without /proc, a process this one may not signal counts as alive.
func Alive(p Proc) bool {
	if start, err := startTime(p.PID); err == nil {
		return p.Start == 0 || start == 0 || start == p.Start
	} else if errors.Is(err, os.ErrNotExist) {
		return false
	}
	err := syscall.Kill(p.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// startTime reads process pid's start time from /proc (field 22 of
// /proc/PID/stat). A process that is gone or a zombie is os.ErrNotExist;
// without /proc it fails with another error.
func startTime(pid int) (uint64, error) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return 0, errors.New("no /proc")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, os.ErrNotExist
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// field 3 is the state.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, nil
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
		return 0, os.ErrNotExist
	}
	if len(f) < 20 {
		return 0, nil
	}
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return start, nil
}

// bootID is the kernel's boot id, "" where unknown.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// pidNS names this process's PID namespace, "" where unknown.
func pidNS() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}
