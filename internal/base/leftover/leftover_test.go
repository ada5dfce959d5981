package leftover_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/leftover"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` to run:", err)
	}
	return cmd.Process.Pid
}

// claimed returns the owner file Claim writes for this process, to be
// edited into another owner.
func claimed(t *testing.T) leftover.Owner {
	t.Helper()
	dir := t.TempDir()
	if err := leftover.Claim(dir, leftover.KindStorm, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, leftover.OwnerFile))
	if err != nil {
		t.Fatal(err)
	}
	var o leftover.Owner
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if o.PID != os.Getpid() || o.Kind != leftover.KindStorm || len(o.Helpers) != 1 {
		t.Fatalf("owner file %s names %+v", b, o)
	}
	o.Helpers = nil
	return o
}

func TestSweep(t *testing.T) {
	me := claimed(t)
	dead := deadPID(t)
	tests := []struct {
		name string
		dir  string // the directory's name under base
		// owner edits this process's owner; nil writes no owner file.
		owner     func(o *leftover.Owner)
		stop      func(string) error
		wantGone  bool
		wantError bool
	}{
		{"owner alive", "stormctl-alive", func(*leftover.Owner) {}, nil, false, false},
		{"owner killed", "stormctl-killed", func(o *leftover.Owner) { o.PID, o.Start = dead, 0 }, nil, true, false},
		{"owner killed, a helper alive", "stormctl-helper", func(o *leftover.Owner) {
			o.Helpers = []leftover.Proc{o.Proc}
			o.PID, o.Start = dead, 0
		}, nil, false, false},
		{"owner killed, helpers killed", "stormctl-helpers-gone", func(o *leftover.Owner) {
			o.PID, o.Start = dead, 0
			o.Helpers = []leftover.Proc{{PID: dead}}
		}, nil, true, false},
		{"pid reused by another process", "stormctl-reused", func(o *leftover.Owner) { o.Start++ }, nil, true, false},
		{"machine rebooted", "stormctl-rebooted", func(o *leftover.Owner) { o.Boot = "another-boot" }, nil, true, false},
		{"another pid namespace", "stormctl-container", func(o *leftover.Owner) {
			o.PID, o.Start, o.PIDNS = dead, 0, "pid:[1]"
		}, nil, false, false},
		{"another kind", "stormctl-pg-x", func(o *leftover.Owner) { o.PID, o.Kind = dead, leftover.KindPostgres }, nil, false, false},
		{"no owner file", "stormctl-unclaimed", nil, nil, false, false},
		{"not stormctl's name", "other-killed", func(o *leftover.Owner) { o.PID = dead }, nil, false, false},
		{"stop ends what runs in it", "stormctl-stopped", func(o *leftover.Owner) { o.PID = dead },
			func(string) error { return nil }, true, false},
		{"stop cannot end it", "stormctl-busy", func(o *leftover.Owner) { o.PID = dead },
			func(string) error { return errors.New("still running") }, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, tc.dir)
			if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.owner != nil {
				o := me
				tc.owner(&o)
				b, _ := json.Marshal(o)
				if err := os.WriteFile(filepath.Join(dir, leftover.OwnerFile), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			removed, err := leftover.Sweep(base, leftover.KindStorm, tc.stop)
			if (err != nil) != tc.wantError {
				t.Errorf("Sweep error = %v, want an error: %v", err, tc.wantError)
			}
			_, statErr := os.Stat(dir)
			if gone := errors.Is(statErr, os.ErrNotExist); gone != tc.wantGone {
				t.Errorf("directory removed: %v, want %v", gone, tc.wantGone)
			}
			if tc.wantGone != (len(removed) == 1 && removed[0].Dir == dir) {
				t.Errorf("Sweep returned %+v", removed)
			}
		})
	}
}

// TestSweepFollowsNoSymlink: a link named like a leftover is not followed,
// even to a directory that is one.
func TestSweepFollowsNoSymlink(t *testing.T) {
	target := t.TempDir()
	o := claimed(t)
	o.PID, o.Start = deadPID(t), 0
	b, _ := json.Marshal(o)
	if err := os.WriteFile(filepath.Join(target, leftover.OwnerFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	if err := os.Symlink(target, filepath.Join(base, "stormctl-link")); err != nil {
		t.Fatal(err)
	}
	if removed, err := leftover.Sweep(base, leftover.KindStorm, nil); err != nil || len(removed) != 0 {
		t.Fatalf("Sweep = %+v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(target, leftover.OwnerFile)); err != nil {
		t.Fatalf("the link's target was touched: %v", err)
	}
}

func TestAlive(t *testing.T) {
	me := claimed(t)
	if !leftover.Alive(me.Proc) {
		t.Error("this process is not alive")
	}
	if leftover.Alive(leftover.Proc{PID: deadPID(t)}) {
		t.Error("a reaped process is alive")
	}
	// A process that exited and was not reaped yet (a zombie) is gone:
	// a killed stormctl's watcher is one until init reaps it.
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for leftover.Alive(leftover.Proc{PID: zombie.Process.Pid}) {
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped process is still alive after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
