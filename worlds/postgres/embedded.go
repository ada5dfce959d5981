package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stormctl/stormctl/internal/base/leftover"
)

// Settings of an embedded cluster, sized for a storm: ~200 clients (a pool
// per storm cell), commit times kept for forensics. Durability stays on
// (fsync, synchronous_commit): the commit flush is part of what a write costs
// on a real server, and the row lock of a seq run is held across it.
const (
	embeddedMaxConnections = 220
	embeddedSharedBuffers  = "256MB"
	embeddedSuperuser      = "postgres"
)

// Cluster is a throw-away PostgreSQL cluster that StartEmbedded started in a
// temp directory. Stop removes it.
type Cluster struct {
	url     string
	port    int
	dir     string // the temp directory: data/, sock/, postgres.log
	bin     binaries
	cred    *syscall.Credential
	logger  *slog.Logger
	watcher *exec.Cmd
	// lifeline is the write end of the watcher's stdin. When this process
	// ends, however it ends, the pipe closes and the watcher removes the
	// cluster.
	lifeline *os.File

	stopOnce sync.Once
	stopErr  error
	// faultMu keeps one nemesis outage at a time.
	faultMu sync.Mutex
}

// URL returns the connection string of the cluster's superuser database.
func (c *Cluster) URL() string { return c.url }

// Port returns the TCP port the cluster listens on at 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// Dir returns the cluster's temp directory (data, socket and log).
func (c *Cluster) Dir() string { return c.dir }

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) sockDir() string { return filepath.Join(c.dir, "sock") }
func (c *Cluster) logFile() string { return filepath.Join(c.dir, "postgres.log") }

// StartEmbedded starts a throw-away cluster: it finds initdb and pg_ctl (PATH,
// then the usual Debian, Homebrew and RPM locations, newest first), runs
// initdb into a new temp directory, and starts the server with pg_ctl -w on a
// free port of 127.0.0.1 with track_commit_timestamp on. As root it runs them
// as ClusterUser (created if missing), since PostgreSQL refuses to run as
// root. Without binaries it fails with ErrNoPostgres, saying how to install
// them. The caller must call Stop; should this process die first, a watcher
// process stops the cluster and removes its directory.
func StartEmbedded(ctx context.Context, logger *slog.Logger) (*Cluster, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	bin, err := findBinaries(os.Getenv("PATH"), binDirGlobs)
	if err != nil {
		return nil, err
	}
	cred, err := clusterCredential(ctx, logger)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempBase(cred), "stormctl-pg-")
	if err != nil {
		return nil, fmt.Errorf("postgres: embedded cluster: %w", err)
	}
	c := &Cluster{dir: dir, bin: bin, cred: cred, logger: logger}
	if err := c.start(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	logger.Info("embedded PostgreSQL started", "port", c.port, "dir", c.dir, "initdb", bin.initdb)
	return c, nil
}

// tempBase is where the cluster's temp directory goes: the usual temp
// directory, unless the cluster's user could not reach it, or could not
// remove its directory from it (as the watcher must once stormctl is
// killed).
func tempBase(cred *syscall.Credential) string {
	base := os.TempDir()
	if cred != nil && (!traversable(base) || !removableBy(base, cred)) {
		return "/tmp"
	}
	return base
}

// removableBy reports whether the cluster's user may remove entries of
// dir: dir is its own, or anyone may write to it (as /tmp).
func removableBy(dir string, cred *syscall.Credential) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == cred.Uid {
		return true
	}
	return fi.Mode().Perm()&0o002 != 0
}

// traversable reports whether every directory from / down to dir lets other
// users through.
func traversable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func (c *Cluster) start(ctx context.Context) error {
	if err := c.own(c.dir); err != nil {
		return err
	}
	if err := c.startWatcher(); err != nil {
		return err
	}
	// Should the watcher die with this process (a reboot), the next
	// stormctl removes the cluster (SweepLeftovers).
	if err := leftover.Claim(c.dir, leftover.KindPostgres, c.watcher.Process.Pid); err != nil {
		return fmt.Errorf("postgres: embedded cluster: %w", err)
	}
	if err := os.Mkdir(c.sockDir(), 0o700); err != nil {
		return fmt.Errorf("postgres: embedded cluster: %w", err)
	}
	if err := c.own(c.sockDir()); err != nil {
		return err
	}
	password, err := c.initdb(ctx)
	if err != nil {
		return err
	}
	if err := c.configure(); err != nil {
		return err
	}
	// A free port can be taken between choosing it and binding it: retry.
	for attempt := 1; ; attempt++ {
		if c.port, err = freePort(); err != nil {
			return err
		}
		err = c.run(ctx, c.bin.pgctl, "start", "-D", c.dataDir(), "-l", c.logFile(), "-w", "-t", "60",
			"-o", "-p "+strconv.Itoa(c.port))
		if err == nil || attempt == 3 || ctx.Err() != nil {
			break
		}
		c.logger.Debug("embedded PostgreSQL did not start; retrying on another port", "err", err)
	}
	if err != nil {
		return fmt.Errorf("postgres: embedded cluster: pg_ctl start: %w%s", err, c.logTail())
	}
	c.url = fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/postgres?sslmode=disable", embeddedSuperuser, password, c.port)
	return nil
}

// initdb creates the data directory with a superuser whose random password
// it returns. TCP logins need the password; the unix socket, in the
// cluster's private directory, trusts its users.
func (c *Cluster) initdb(ctx context.Context) (string, error) {
	var pw [16]byte
	if _, err := rand.Read(pw[:]); err != nil {
		return "", fmt.Errorf("postgres: embedded cluster: password: %w", err)
	}
	password := hex.EncodeToString(pw[:])
	pwfile := filepath.Join(c.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("postgres: embedded cluster: %w", err)
	}
	defer os.Remove(pwfile)
	if err := c.own(pwfile); err != nil {
		return "", err
	}
	err := c.run(ctx, c.bin.initdb, "-D", c.dataDir(), "-U", embeddedSuperuser, "--pwfile="+pwfile,
		"--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C")
	if err != nil {
		return "", fmt.Errorf("postgres: embedded cluster: initdb: %w", err)
	}
	return password, nil
}

// configure appends the cluster's settings to postgresql.conf (the last
// setting of a name wins).
func (c *Cluster) configure() error {
	settings := fmt.Sprintf(`
# stormctl embedded cluster
listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
max_connections = %d
shared_buffers = %s
track_commit_timestamp = on
fsync = on
synchronous_commit = on
full_page_writes = on
max_wal_size = 1GB
logging_collector = off
log_min_messages = warning
`, c.sockDir(), embeddedMaxConnections, embeddedSharedBuffers)
	f, err := os.OpenFile(filepath.Join(c.dataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("postgres: embedded cluster: configure: %w", err)
	}
	_, werr := f.WriteString(settings)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("postgres: embedded cluster: configure: %w", err)
	}
	return nil
}

// watcherScript waits for its stdin to close (this process ended or Stop ran),
// then stops the cluster and removes its directory. $1 pg_ctl, $2 data
// directory, $3 the cluster's directory.
const watcherScript = `read -r _ignored
"$1" stop -D "$2" -m fast -w -t 30 >/dev/null 2>&1 || "$1" stop -D "$2" -m immediate -w -t 30 >/dev/null 2>&1
rm -rf "$3"
`

// startWatcher starts the watcher process in a process group of its own (a
// Ctrl-C to this process's group does not reach it), as the cluster's user.
func (c *Cluster) startWatcher() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("postgres: embedded cluster: watcher: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", watcherScript, "stormctl-pg-watcher", c.bin.pgctl, c.dataDir(), c.dir)
	cmd.Stdin = r
	cmd.Env = c.env()
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.cred}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("postgres: embedded cluster: watcher: %w", err)
	}
	c.watcher, c.lifeline = cmd, w
	return nil
}

// run runs a server tool as the cluster's user, its output in the error.
func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env()
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(name), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// env is this process's environment without PG* variables (which would
// point the tools elsewhere), in the C locale.
func (c *Cluster) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG=") {
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C", "LANG=C")
}

// own hands path to the cluster's user (as root).
func (c *Cluster) own(path string) error {
	if c.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
		return fmt.Errorf("postgres: embedded cluster: %w", err)
	}
	return nil
}

// logTail returns the end of the server log for error messages.
func (c *Cluster) logTail() string {
	b, err := os.ReadFile(c.logFile())
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\nserver log:\n" + strings.TrimSpace(string(b))
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("postgres: embedded cluster: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop stops the cluster (pg_ctl stop -m fast, immediate if that fails) and
// removes its directory, then lets the watcher go. Safe to call more than
// once; later calls return the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.faultMu.Lock() // an outage under way restarts the server first
		defer c.faultMu.Unlock()
		c.stopErr = c.stop()
	})
	return c.stopErr
}

// EmbeddedSource returns a Source that starts one embedded cluster when the
// first World is opened and hands every World base with the cluster's URL,
// and a stop func that stops the cluster if it was started (a no-op
// otherwise). A failed start is remembered and returned to every later call.
func EmbeddedSource(logger *slog.Logger, base Config) (Source, func() error) {
	var (
		mu       sync.Mutex
		c        *Cluster
		startErr error
	)
	src := func(ctx context.Context) (Config, error) {
		mu.Lock()
		defer mu.Unlock()
		if c == nil && startErr == nil {
			c, startErr = StartEmbedded(ctx, logger)
		}
		if startErr != nil {
			return Config{}, startErr
		}
		cfg := base
		cfg.URL, cfg.Cluster = c.URL(), c
		return cfg, nil
	}
	stop := func() error {
		mu.Lock()
		defer mu.Unlock()
		if c == nil {
			return nil
		}
		return c.Stop()
	}
	return src, stop
}

func (c *Cluster) stop() error {
	var errs []error
	if _, err := os.Stat(filepath.Join(c.dataDir(), "postmaster.pid")); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		err := c.run(ctx, c.bin.pgctl, "stop", "-D", c.dataDir(), "-m", "fast", "-w", "-t", "60")
		if err != nil {
			err = errors.Join(err, c.run(ctx, c.bin.pgctl, "stop", "-D", c.dataDir(), "-m", "immediate", "-w", "-t", "20"))
		}
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("postgres: embedded cluster: pg_ctl stop: %w", err))
		}
	}
	if err := os.RemoveAll(c.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("postgres: embedded cluster: remove %s: %w", c.dir, err))
	}
	if c.lifeline != nil {
		// The watcher now finds nothing left to do; its pg_ctl calls are
		// bounded by their own timeouts.
		c.lifeline.Close()
		_ = c.watcher.Wait()
	}
	c.logger.Info("embedded PostgreSQL stopped and removed", "dir", c.dir)
	return errors.Join(errs...)
}
