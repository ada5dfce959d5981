package postgres_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/internal/base/leftover"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// TestEmbeddedSettings: the package's cluster listens on 127.0.0.1 only,
// keeps commit times, keeps durability on and is sized for a storm; as root
// its data belongs to the unprivileged ClusterUser.
func TestEmbeddedSettings(t *testing.T) {
	url := cluster.URL(t)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	want := map[string]string{
		"track_commit_timestamp": "on",
		"fsync":                  "on",
		"synchronous_commit":     "on",
		"max_connections":        "220",
		"shared_buffers":         "256MB",
		"listen_addresses":       "127.0.0.1",
	}
	for name, v := range want {
		var got string
		if err := conn.QueryRow(t.Context(), "SELECT current_setting($1)", name).Scan(&got); err != nil || got != v {
			t.Errorf("%s = %q (%v), want %q", name, got, err, v)
		}
	}
	var sock string
	if err := conn.QueryRow(t.Context(), "SELECT current_setting('unix_socket_directories')").Scan(&sock); err != nil ||
		!strings.HasPrefix(sock, cluster.Cluster(t).Dir()) {
		t.Errorf("unix_socket_directories = %q (%v), want a directory inside %s", sock, err, cluster.Cluster(t).Dir())
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup(postgres.ClusterUser)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(cluster.Cluster(t).Dir(), "data"))
		if err != nil {
			t.Fatal(err)
		}
		if uid := fi.Sys().(*syscall.Stat_t).Uid; strconv.FormatUint(uint64(uid), 10) != u.Uid {
			t.Errorf("the data directory belongs to uid %d, want %s (%s)", uid, u.Uid, postgres.ClusterUser)
		}
	}
}

// crashHelperEnv makes the test binary a helper process that starts a
// cluster, prints its directory and port, and waits to be killed.
const crashHelperEnv = "STORMCTL_PG_CRASH_HELPER"

func TestCrashHelper(t *testing.T) {
	if os.Getenv(crashHelperEnv) == "" {
		t.Skip("helper process for TestKilledOwnerLeavesNoCluster")
	}
	c, err := postgres.StartEmbedded(context.Background(), nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("cluster", c.Dir(), c.Port())
	select {} // until killed
}

// startCrashHelper starts TestCrashHelper as a process of its own and
// returns it with its cluster's directory and port; t's cleanup kills it.
func startCrashHelper(t *testing.T) (cmd *exec.Cmd, dir string, port int) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashHelperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "cluster" {
			n, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("the helper printed port %q: %v", f[2], err)
			}
			dir, port = f[1], n
			break
		}
		t.Log("helper:", sc.Text())
	}
	if dir == "" {
		t.Fatal("the helper started no cluster")
	}
	if !listening(port) {
		t.Fatalf("the helper's cluster does not listen on port %d", port)
	}
	return cmd, dir, port
}

// waitGone waits up to 60 s for a cluster's directory to go and its port
// to close.
func waitGone(t *testing.T, dir string, port int, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := os.Stat(dir)
		gone := errors.Is(err, os.ErrNotExist)
		if gone && !listening(port) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after %s the cluster is still there (directory gone: %v, listening: %v)", what, gone, listening(port))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKilledOwnerLeavesNoCluster: when the process that started a cluster is
// killed outright (no Stop, no deferred code), the watcher stops the
// cluster and removes its directory.
func TestKilledOwnerLeavesNoCluster(t *testing.T) {
	cluster.URL(t)
	cmd, dir, port := startCrashHelper(t)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, dir, port, "its process was killed")
}

// TestSweepRemovesAnAbandonedCluster: a cluster whose owner and watcher
// were both killed (as by a reboot, where nothing runs any more; here the
// server still does) is found by the next stormctl's SweepLeftovers, its
// server stopped and its directory removed. A live cluster is left alone.
func TestSweepRemovesAnAbandonedCluster(t *testing.T) {
	cluster.URL(t)
	cmd, dir, port := startCrashHelper(t)
	b, err := os.ReadFile(filepath.Join(dir, leftover.OwnerFile))
	if err != nil {
		t.Fatal(err)
	}
	var owner leftover.Owner
	if err := json.Unmarshal(b, &owner); err != nil || owner.PID != cmd.Process.Pid || len(owner.Helpers) != 1 {
		t.Fatalf("owner file %s: %v; want the helper (pid %d) and its watcher", b, err, cmd.Process.Pid)
	}
	if removed, err := postgres.SweepLeftovers(); err != nil || slices.ContainsFunc(removed, func(r leftover.Removed) bool { return r.Dir == dir }) {
		t.Fatalf("SweepLeftovers removed a live cluster: %+v, %v", removed, err)
	}
	// The watcher first, so that it cannot stop the server when its
	// owner dies.
	if err := syscall.Kill(owner.Helpers[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); leftover.Alive(owner.Helpers[0]); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher still runs 10 s after SIGKILL")
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !listening(port) {
		t.Fatal("the server stopped with its owner: nothing left to sweep")
	}
	removed, err := postgres.SweepLeftovers()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(removed, func(r leftover.Removed) bool { return r.Dir == dir }) {
		t.Fatalf("SweepLeftovers removed %+v, not %s", removed, dir)
	}
	waitGone(t, dir, port, "the sweep")
}

func listening(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
