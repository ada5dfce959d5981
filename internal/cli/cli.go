// Package cli is stormctl's command line: one file per command, each an
// options struct, a NewCmdX constructor and a runX function. Typed errors
// decide the exit code in one place, ExitCode. Every command prints through
// one layer (output.go): --format declared by addFormatFlag, and
// Format.Print dispatching a Printable to its table, markdown or JSON.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-isatty"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stormctl/stormctl/internal/redact"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkit"
	"github.com/stormctl/stormctl/worlds/devkit/sidecar"
	"github.com/stormctl/stormctl/worlds/local"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/vercel"
)

// Exit codes. **contract** (docs/exit-codes.md)
const (
	ExitOK          = 0
	ExitGateFailed  = 1
	ExitUsage       = 2
	ExitInfra       = 3
	ExitInternal    = 4
	ExitInterrupted = 130
)

// UsageError is bad usage or bad input: exit 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// InfraError is an unreachable or unusable store: exit 3.
type InfraError struct{ Err error }

func (e *InfraError) Error() string { return e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

// InternalError is an unexpected failure inside a command: an artifact that
// cannot be written (disk full, permission lost mid-storm), a bug (a panic
// on any goroutine stormctl owns). Exit 4, never 2: the input was fine.
type InternalError struct {
	Err error
	// Artifacts is the directory the command was writing, if any.
	Artifacts string
	// StackFile holds the stack of a panic (Err is then a *crash.Error).
	StackFile string
}

// Error is the failure's own text (ExitCode adds the rest of the line).
func (e *InternalError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *InternalError) Unwrap() error { return e.Err }

// ErrGateFailed is a gate whose rules were broken: exit 1.
var ErrGateFailed = errors.New("gate failed")

// ErrInterrupted is a command stopped by Ctrl-C: exit 130.
var ErrInterrupted = errors.New("interrupted")

func usage(format string, a ...any) error { return &UsageError{Err: fmt.Errorf(format, a...)} }

// IOStreams are the command's input and outputs.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrTTY reports whether ErrOut is a terminal: progress redraws a live
	// line per cell there, and writes plain lines otherwise. Out is the
	// same on a terminal and in a pipe (--format chooses).
	ErrTTY bool
}

// Factory builds the commands' dependencies lazily.
type Factory struct {
	IO      *IOStreams
	Version string
	// Worlds returns the registry of every world stormctl knows, reaching
	// stores through ep, and a function that releases what it started
	// (an embedded PostgreSQL cluster).
	Worlds func(ep WorldEndpoints, logger *slog.Logger) (*worlds.Registry, func() error)
	Logger func() *slog.Logger
}

// NewFactory returns the production factory on the process's stdio.
func NewFactory() *Factory {
	io := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrTTY: isatty.IsTerminal(os.Stderr.Fd())}
	return &Factory{
		IO:      io,
		Version: version(),
		Worlds:  DefaultWorlds,
		Logger: func() *slog.Logger {
			return slog.New(newLineHandler(io.ErrOut, slog.LevelWarn))
		},
	}
}

// WorldEndpoints say where the worlds' stores are; zero values mean the
// embedded defaults. The flags that fill it are registered by
// WorldEndpoints.AddFlags on every command that opens worlds.
type WorldEndpoints struct {
	// PGURL is a PostgreSQL server to use instead of an embedded cluster.
	PGURL string
	// Keep keeps the worlds' schemas and directories after the storm.
	Keep bool
	// PoolSize is the connection pool of each postgres world (0: default).
	PoolSize int32
	// IngestURL, DynamoEndpoint and RedisURL point the vercel world at a
	// running ingest server, DynamoDB (Local or AWS) and Redis.
	IngestURL      string
	DynamoEndpoint string
	RedisURL       string
	// DevkitDir is a vercel/workflow checkout whose built packages the
	// devkit worlds run instead of the published ones.
	DevkitDir string
	// Progress receives what setting a world up reports once (the devkit
	// packages' first install); not a flag. Nil: nothing is reported.
	Progress io.Writer
}

// pgURLHelp is the help of --pg-url wherever stormctl opens the postgres
// world's store (storm, fidelity, bench).
const pgURLHelp = "PostgreSQL server for the postgres world (default: a throw-away embedded cluster)"

// addPGURLFlag declares --pg-url into p: a PostgreSQL server, as a
// postgres:// URL or keyword=value settings (validPGURL checks it). help
// says what the server is for: pgURLHelp, or the database forensics
// attaches to.
func addPGURLFlag(fl *pflag.FlagSet, p *string, help string) {
	fl.StringVar(p, "pg-url", "", help)
}

// AddFlags registers the endpoint flags on fl.
func (ep *WorldEndpoints) AddFlags(fl *pflag.FlagSet) {
	addPGURLFlag(fl, &ep.PGURL, pgURLHelp)
	fl.StringVar(&ep.IngestURL, "ingest-url", "", "running ingest server for the vercel world (default: stormctl starts one on 127.0.0.1)")
	fl.StringVar(&ep.DynamoEndpoint, "dynamo-endpoint", "", "DynamoDB endpoint (DynamoDB Local or AWS) for the vercel world (default: an embedded DynamoDB-API server)")
	fl.StringVar(&ep.RedisURL, "redis-url", "", "Redis for the vercel world's count index (default: an embedded Redis-API server)")
	fl.StringVar(&ep.DevkitDir, "devkit-dir", "", "a vercel/workflow checkout whose built packages (packages/world-local/dist, packages/world-postgres/dist) the devkit worlds run instead of the published ones")
}

// endpointFlagNames are the names of the flags AddFlags declares, in the
// order it declares them.
func endpointFlagNames() []string {
	fl := pflag.NewFlagSet("endpoints", pflag.ContinueOnError)
	fl.SortFlags = false
	new(WorldEndpoints).AddFlags(fl)
	var names []string
	fl.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

// Validate checks each endpoint flag's syntax before anything is opened;
// the message names the flag and the form it wants. Whether the endpoint
// answers is for the world to find out (an unreachable one is infra, exit 3).
func (ep WorldEndpoints) Validate() error {
	if err := validPGURL("--pg-url", ep.PGURL); err != nil {
		return err
	}
	for _, u := range []struct{ flag, url string }{{"--ingest-url", ep.IngestURL}, {"--dynamo-endpoint", ep.DynamoEndpoint}} {
		if u.url == "" {
			continue
		}
		// Hostname, not Host: "http://:8080" has a Host (":8080") and no
		// host name, and a client would dial this machine for it.
		if p, err := url.Parse(u.url); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Hostname() == "" {
			return fmt.Errorf("%s %q: want http://host:port or https://host", u.flag, redact.String(u.url))
		}
	}
	if ep.RedisURL != "" {
		if _, err := redis.ParseURL(ep.RedisURL); err != nil {
			return fmt.Errorf("--redis-url %q: want redis://[user:password@]host:port[/db] or rediss://...: %s",
				redact.String(ep.RedisURL), redact.Text(strings.ReplaceAll(err.Error(), ep.RedisURL, redact.String(ep.RedisURL)), ep.RedisURL))
		}
	}
	if ep.DevkitDir != "" {
		if _, err := sidecar.CheckoutLayout(ep.DevkitDir); err != nil {
			return err
		}
	}
	return nil
}

// validPGURL checks a PostgreSQL connection string ("" is none): a
// postgres:// or postgresql:// URL, or keyword=value settings, as pgx reads
// them.
func validPGURL(flag, s string) error {
	if s == "" {
		return nil
	}
	// A "://" after an "=" is inside keyword=value settings (a password
	// may hold one): pgx reads those, and the scheme message would print
	// them.
	if scheme, _, ok := strings.Cut(s, "://"); ok && !strings.Contains(scheme, "=") && scheme != "postgres" && scheme != "postgresql" {
		return fmt.Errorf("%s: scheme %q: want postgres://user:password@host:port/database or postgresql://...", flag, scheme)
	}
	if _, err := pgx.ParseConfig(s); err != nil {
		return fmt.Errorf("%s: %s (want postgres://user:password@host:port/database)", flag, parseError(s, err))
	}
	return nil
}

// parseError is pgx's refusal of connection string s without any secret
// of s: pgx masks the password as it reads the string, which is not where
// a mistyped string's password ends (it reads a URL's userinfo up to the
// first "@"), so its text is rebuilt around redact.String's, and what pgx
// adds (its reason, the parser's error) is masked with redact.Text.
func parseError(s string, err error) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return redact.Text(err.Error(), s)
	}
	text := pe.Error()
	inner := ""
	if u := errors.Unwrap(pe); u != nil {
		inner = u.Error()
		text = strings.TrimSuffix(text, " ("+inner+")")
	}
	reason := text
	if i := strings.LastIndex(text, "`: "); i >= 0 {
		reason = text[i+len("`: "):]
	}
	if inner != "" {
		reason += " (" + inner + ")"
	}
	return "cannot parse `" + redact.String(s) + "`: " + redact.Text(reason, s)
}

// DefaultWorlds registers every built-in world. Nothing is started until a
// world is opened: the embedded cluster starts on the first postgres Open,
// the devkit sidecar (and devkit-postgres's own cluster) on the first devkit
// Open.
func DefaultWorlds(ep WorldEndpoints, logger *slog.Logger) (*worlds.Registry, func() error) {
	r := &worlds.Registry{}
	local.Register(r)
	base := postgres.Config{Keep: ep.Keep, PoolSize: ep.PoolSize}
	var src postgres.Source
	stop := func() error { return nil }
	if ep.PGURL != "" {
		base.URL = ep.PGURL
		src = func(context.Context) (postgres.Config, error) { return base, nil }
	} else {
		src, stop = postgres.EmbeddedSource(logger, base)
	}
	var warn sync.Once
	postgres.Register(r, func(ctx context.Context) (postgres.Config, error) {
		cfg, err := src(ctx)
		if err == nil && ep.PGURL != "" {
			warn.Do(func() { warnCommitTimestamps(ctx, cfg, logger) })
		}
		return cfg, err
	})
	vc := vercel.Config{IngestURL: ep.IngestURL, DynamoEndpoint: ep.DynamoEndpoint, RedisURL: ep.RedisURL, Keep: ep.Keep}
	vercel.Register(r, func(context.Context) (vercel.Config, error) { return vc, nil })
	host := devkit.NewHost(devkit.Config{Dir: ep.DevkitDir, Progress: ep.Progress, Logger: logger})
	devkit.Register(r, host)
	return r, func() error { return errors.Join(stop(), host.Stop()) }
}

// warnCommitTimestamps says plainly when a server given with --pg-url cannot
// give commit times, and how to fix that; the storm runs on regardless.
func warnCommitTimestamps(ctx context.Context, cfg postgres.Config, logger *slog.Logger) {
	conn, err := pgx.Connect(ctx, cfg.URL)
	if err != nil {
		return // Open reports the connection error itself
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var on string
	if conn.QueryRow(ctx, "SHOW track_commit_timestamp").Scan(&on) == nil && on != "on" {
		logger.Warn("track_commit_timestamp is off on --pg-url, so commit-order forensics use the commit times the writers observed, not the store's; to get the store's, run ALTER SYSTEM SET track_commit_timestamp = on and restart the server")
	}
}

// version is this build's version (versionOf its build info).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionOf(bi)
}

// versionOf formats a build's version: the main module's version when it
// has one (a release, or the pseudo-version go derives from a tag); for a
// "(devel)" build, "devel+REV" from the build's VCS stamp (the commit's
// first 7 hex digits), then its commit time and "modified" when the work
// tree had changes, e.g. "devel+027270d (2026-12-03T10:11:12Z, modified)";
// "devel (no VCS stamp)" when the build has none (go build
// -buildvcs=false, a build outside a git checkout, or in a git worktree,
// which go does not stamp).
func versionOf(bi *debug.BuildInfo) string {
	if bi == nil {
		return "devel (no build info)"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel (no VCS stamp)"
	}
	v := "devel+" + rev[:min(7, len(rev))]
	var notes []string
	if at != "" {
		notes = append(notes, at)
	}
	if modified {
		notes = append(notes, "modified")
	}
	if len(notes) > 0 {
		v += " (" + strings.Join(notes, ", ") + ")"
	}
	return v
}

// Main runs stormctl with the process's arguments and returns its exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := NewFactory()
	root := NewCmdRoot(f)
	root.SetArgs(os.Args[1:])
	return ExitCode(Execute(ctx, root), f.IO.ErrOut)
}

// ExitCode prints err as one line (if any) and maps it to an exit code. An
// untyped error is cobra's own (unknown command or flag, wrong arguments),
// returned before any command ran: bad usage. Every error a command returns
// is typed on the way out (guardRun).
func ExitCode(err error, w io.Writer) int {
	var ue *UsageError
	var ie *InfraError
	var bug *InternalError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrInterrupted):
		fmt.Fprintln(w, "stormctl: interrupted; partial results above and in the output directory")
		return ExitInterrupted
	case errors.Is(err, ErrGateFailed):
		return ExitGateFailed
	case errors.As(err, &ue):
		fmt.Fprintf(w, "stormctl: %s\n", oneLine(err))
		return ExitUsage
	case errors.As(err, &ie):
		fmt.Fprintf(w, "stormctl: %s\n", oneLine(err))
		return ExitInfra
	case errors.As(err, &bug):
		fmt.Fprintf(w, "stormctl: %s\n", internalLine(bug))
		return ExitInternal
	}
	fmt.Fprintf(w, "stormctl: %s\n", oneLine(err))
	return ExitUsage
}

// oneLine folds a multi-line error (pgx lists every address it tried) into
// one line, dropping repeated lines.
func oneLine(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !slices.Contains(parts, l) {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// NewCmdRoot returns the root command with every subcommand.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "stormctl",
		Short: "Storm durable-workflow event logs and show whether they stay ordered",
		Long: `stormctl runs storms: many concurrent workflow runs, each replayed by many
concurrent invocations, against event-log stores ("worlds") under named
conditions (the legacy ULID contract, event_{seq}, call-site ids, ordered wake,
...). It counts CORRUPTED_EVENT_LOG and every other outcome per cell, applies
forensics to what every reader saw, and prints the table you paste into a PR.`,
		Example: `  # the main job: legacy contract against the event_{seq} target, local world
  stormctl storm --world local --condition main,seq+callsite+ordered --runs 24

  # what can be stormed
  stormctl conditions
  stormctl scenarios
  stormctl worlds`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       f.Version,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		NewCmdStorm(f, nil),
		NewCmdReport(f, nil),
		NewCmdCompare(f, nil),
		NewCmdGate(f, nil),
		NewCmdFidelity(f, nil),
		NewCmdMerge(f, nil),
		NewCmdForensics(f, nil),
		NewCmdExplain(f, nil),
		NewCmdBench(f, nil),
		NewCmdConditions(f, nil),
		NewCmdScenarios(f, nil),
		NewCmdWorlds(f, nil),
		NewCmdVersion(f),
	)
	for _, c := range root.Commands() {
		c.SetFlagErrorFunc(flagError)
	}
	guardRuns(root)
	return root
}
