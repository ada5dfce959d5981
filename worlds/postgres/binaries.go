package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stormctl/stormctl/worlds"
)

// ErrNoPostgres: no PostgreSQL server binaries were found, so no embedded
// cluster can start. Its message says how to install them. It matches
// worlds.ErrPrerequisite.
var ErrNoPostgres = worlds.Prerequisite("no PostgreSQL server binaries (initdb, pg_ctl) found")

// binDirGlobs are where PostgreSQL server binaries live when they are not on
// PATH: Debian/Ubuntu, Homebrew (Intel, Apple silicon), PGDG RPMs, source
// builds. Within a pattern, higher versions are tried first.
var binDirGlobs = []string{
	"/usr/lib/postgresql/*/bin",
	"/usr/local/opt/postgresql*/bin",
	"/opt/homebrew/opt/postgresql*/bin",
	"/usr/pgsql-*/bin",
	"/usr/local/pgsql/bin",
}

// binaries are the server tools a cluster needs.
type binaries struct {
	initdb, pgctl string
}

// findBinaries looks for initdb and pg_ctl on path (a PATH value), then in
// the directories globs match, newest version first.
func findBinaries(path string, globs []string) (binaries, error) {
	var dirs []string
	for _, d := range filepath.SplitList(path) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		slices.SortStableFunc(m, func(a, b string) int { return compareVersions(versionOf(b), versionOf(a)) })
		dirs = append(dirs, m...)
	}
	for _, d := range dirs {
		b := binaries{initdb: filepath.Join(d, "initdb"), pgctl: filepath.Join(d, "pg_ctl")}
		if executable(b.initdb) && executable(b.pgctl) {
			return b, nil
		}
	}
	return binaries{}, fmt.Errorf("%w on PATH or in %s: install them (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql) "+
		"or pass --pg-url to use a running server", ErrNoPostgres, strings.Join(globs, ", "))
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

var versionRE = regexp.MustCompile(`(?:postgresql@?|pgsql-|postgresql/)(\d+)(?:\.(\d+))?`)

// versionOf reads the major and minor version out of a binary directory;
// an unversioned directory is (-1, 0).
func versionOf(dir string) [2]int {
	m := versionRE.FindStringSubmatch(dir)
	if m == nil {
		return [2]int{-1, 0}
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return [2]int{major, minor}
}

func compareVersions(a, b [2]int) int {
	if c := a[0] - b[0]; c != 0 {
		return c
	}
	return a[1] - b[1]
}

// ClusterUser is the unprivileged OS user an embedded cluster runs as when
// stormctl runs as root (PostgreSQL refuses to run as root). It is created
// when missing.
const ClusterUser = "stormctl-pg"

// clusterCredential returns the credential the cluster's processes run
// with: nil when not root; as root, that of ClusterUser, created if needed.
func clusterCredential(ctx context.Context, logger *slog.Logger) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	return ensureUser(ctx, logger, ClusterUser, os.TempDir())
}

// ensureUser returns the credential of the system user name, creating it
// when missing. stormctl processes on one machine (the shards of a storm,
// go test's packages) create it one at a time, holding a lock file in
// lockDir: useradd runs that overlap leave a user that exists for a moment
// under one uid and is then written again under another, and a process
// that looked it up in that moment ran initdb as a uid that no longer
// existed (seen: 4 shards started together as root, 2 failed so).
func ensureUser(ctx context.Context, logger *slog.Logger, name, lockDir string) (*syscall.Credential, error) {
	unlock, err := lockFile(ctx, filepath.Join(lockDir, "stormctl-useradd-"+name+".lock"))
	if err != nil {
		return nil, fmt.Errorf("postgres: creating the unprivileged user %s: %w", name, err)
	}
	defer unlock()
	var lastErr error
	for attempt := range 5 {
		u, err := user.Lookup(name)
		if err == nil {
			return credentialOf(u)
		}
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return nil, fmt.Errorf("postgres: look up user %s: %w", name, err)
		}
		// A process other than stormctl may hold the passwd file's lock;
		// look the user up again after a pause.
		lastErr = addUser(ctx, logger, name)
		if lastErr != nil {
			time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
		}
	}
	return nil, fmt.Errorf("postgres: running as root, and PostgreSQL refuses to run as root: could not create the unprivileged user %s (%v); "+
		"create it (useradd --system %s) or run stormctl as an unprivileged user", name, lastErr, name)
}

// lockFile takes an exclusive flock of path (created if missing), waiting
// until it is free or ctx is done, and returns its release.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s: %w", path, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func credentialOf(u *user.User) (*syscall.Credential, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres: user %s: uid %q: %w", u.Username, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres: user %s: gid %q: %w", u.Username, u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// addUser creates the user name: a system account with its own group, no
// home and no login shell.
func addUser(ctx context.Context, logger *slog.Logger, name string) error {
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		useradd = "/usr/sbin/useradd"
		if !executable(useradd) {
			return errors.New("useradd not found")
		}
	}
	shell := "/usr/sbin/nologin"
	if !executable(shell) {
		shell = "/bin/false"
	}
	logger.Info("creating an unprivileged user for the embedded PostgreSQL cluster", "user", name)
	out, err := exec.CommandContext(ctx, useradd, "--system", "--user-group", "--no-create-home",
		"--home-dir", "/nonexistent", "--shell", shell, name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("useradd: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
