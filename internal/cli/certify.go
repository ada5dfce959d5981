package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/certify"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/pkgworld"
	"github.com/stormctl/stormctl/worlds/postgres"
	"github.com/stormctl/stormctl/worlds/redisserver"
)

// CertifyOptions are the certify command's options.
type CertifyOptions struct {
	IO      *IOStreams
	Factory *Factory
	Format  Format
	// World is the package:… world to certify; WorldEnv its sidecar's
	// added environment.
	World    string
	WorldEnv []string
	// PgURL is --pg-url: the PostgreSQL server @workflow/world-postgres
	// runs on when --world-env names none (default: an embedded cluster).
	PgURL string
	// StartRedis, when set, is the variable a redis-server of stormctl's
	// own is given to the package in (--start-redis).
	StartRedis string
	Load       certify.Load
	// StormRuns is the short storm's runs per cell (0: no storm); Out
	// keeps its artifacts ("": a temp directory, removed).
	StormRuns int
	Out       string
}

// certifyScenarios are the short storm's scenarios.
var certifyScenarios = []string{"step-storm", "hook-storm", "control"}

// NewCmdCertify returns `stormctl certify`. runF replaces runCertify in
// tests.
func NewCmdCertify(f *Factory, runF func(context.Context, *CertifyOptions) error) *cobra.Command {
	opts := &CertifyOptions{IO: f.IO, Factory: f, Load: certify.DefaultLoad()}
	cmd := &cobra.Command{
		Use:   "certify package:NAME[@VERSION] | package:PATH",
		Short: "Print a World package's report card: conformance, contention, a short storm",
		Long: `Certify a World package: install it (npm, into ~/.cache/stormctl/packages;
or load a local build), create its world through its factory (its default
export or createWorld, configured by --world-env), and print its report card:

  conformance  the conformance suite's checks (worlds/worldtest) that apply to
               the contract the package claims (its @workflow/world and the
               specVersion that exports, stated on the card): PASS, FAIL with
               the first counterexample, or SKIP with the reason;
  contention   --writers writers and --readers readers at once: uniqueness of
               every creation per correlation id (a counterexample names the
               run, the correlation id and two event ids), density and prefix
               reads, cursor resumption, commit order against id order where
               the store has a commit clock stormctl reads (else SKIP, saying
               why), idempotency keys where the contract has them;
  storm        a short storm of step-storm, hook-storm and control under the
               real runtime (the published @workflow/core 4.8.9 hosting the
               package: its own queue where it delivers in process, else
               world-local's in-process queue composed with its storage),
               condition main, with its table and classes; on the model
               engine, saying why, for a contract newer than that core's.

Nothing passes on nothing: a check that could not run or observed nothing is
UNKNOWN, never PASS. Exit 1 when a check FAILs, when one is UNKNOWN, or when
none passed (the card says which); 2 for a package npm cannot fetch; 3 when
node, npm or the package's server is missing.`,
		Example: `  # the in-memory starter world (installs it on first use)
  stormctl certify package:@workflow-worlds/starter

  # the Redis world against a Redis server of yours, as a card for a README
  stormctl certify package:@workflow-worlds/redis \
    --world-env WORKFLOW_REDIS_URI=redis://127.0.0.1:6379 --format markdown

  # ... or against a redis-server stormctl starts (and stops) itself
  stormctl certify package:@workflow-worlds/redis --start-redis WORKFLOW_REDIS_URI

  # upstream's local world at a pinned version
  stormctl certify package:@workflow/world-local@4.4.1

  # your own build, before you publish it
  (cd my-world && npm install && npm run build)
  stormctl certify package:./my-world`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.World = args[0]
			if !pkgworld.IsPackage(opts.World) {
				return usage("certify %s: want package:NAME[@VERSION] or package:PATH", opts.World)
			}
			for _, f := range []struct {
				name string
				v    int
			}{{"writers", opts.Load.Writers}, {"readers", opts.Load.Readers}, {"rounds", opts.Load.Rounds}} {
				if f.v < 1 {
					return usage("--%s must be at least 1, got %d", f.name, f.v)
				}
			}
			if opts.Load.Writers < 2 {
				return usage("--writers must be at least 2 (contention needs two writers), got %d", opts.Load.Writers)
			}
			if strings.ContainsAny(opts.StartRedis, "= \t") {
				return usage("--start-redis %q: want the name of the variable the package reads its Redis URL from, e.g. WORKFLOW_REDIS_URI", opts.StartRedis)
			}
			if err := postgres.ValidURL("--pg-url", opts.PgURL); err != nil {
				return &UsageError{Err: err}
			}
			if opts.StormRuns < 0 {
				return usage("--storm-runs must be at least 0, got %d", opts.StormRuns)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCertify(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.WorldEnv, "world-env", nil, worldEnvHelp)
	fl.StringVar(&opts.PgURL, "pg-url", "", "PostgreSQL server for @workflow/world-postgres: a database of its own per check, created there and dropped at the end (default: the server --world-env WORKFLOW_POSTGRES_URL or DATABASE_URL names, else an embedded cluster with track_commit_timestamp on)")
	fl.StringVar(&opts.StartRedis, "start-redis", "", "start a redis-server of stormctl's own (from PATH; on a free port, without persistence, stopped at the end) and give its URL to the package in this variable, e.g. WORKFLOW_REDIS_URI")
	fl.IntVar(&opts.Load.Writers, "writers", opts.Load.Writers, "concurrent writers in the contention checks")
	fl.IntVar(&opts.Load.Readers, "readers", opts.Load.Readers, "concurrent readers in the contention checks")
	fl.IntVar(&opts.Load.Rounds, "rounds", opts.Load.Rounds, "runs each contention check writes")
	fl.IntVar(&opts.StormRuns, "storm-runs", 2, "runs per cell of the short storm (0: no storm)")
	fl.StringVar(&opts.Out, "out", "", "keep the short storm's artifacts in this directory (default: a temp directory, removed)")
	addFormatFlag(cmd, &opts.Format, map[Format]string{FormatMarkdown: "a card for a README or PR"})
	return cmd
}

func runCertify(ctx context.Context, opts *CertifyOptions) error {
	logger := opts.Factory.Logger()
	progress := opts.IO.ErrOut
	if opts.StartRedis != "" {
		srv, err := redisserver.Start(ctx)
		if err != nil {
			return &InfraError{Err: fmt.Errorf("--start-redis: %w", err)}
		}
		defer func() {
			if err := srv.Stop(); err != nil {
				logger.Warn("stopping the redis-server", "err", err)
			}
		}()
		fmt.Fprintf(progress, "certify: redis-server started at %s for the package (%s)\n", srv.URL(), opts.StartRedis)
		opts.WorldEnv = append(slices.Clone(opts.WorldEnv), opts.StartRedis+"="+srv.URL())
	}
	w, err := openPackage(ctx, opts.IO, opts.World, pkgworld.Options{Env: opts.WorldEnv, PgURL: opts.PgURL}, logger)
	if err != nil {
		return err
	}
	defer func() {
		if err := w.Stop(); err != nil {
			logger.Warn("stopping the package's sidecar", "err", err)
		}
	}()
	spec, err := w.Spec(ctx)
	if err != nil {
		return &InfraError{Err: fmt.Errorf("certify %s: the sidecar could not load the package: %w", opts.World, err)}
	}
	entry := w.Entry(opts.World, spec)
	card := certify.Card{
		World: opts.World, Package: w.Name, Version: w.Version, Load: opts.Load, Stormctl: opts.Factory.Version,
		Contract: certify.Contract{World: spec.World, SpecVersion: spec.SpecVersion, Scheme: string(eventlog.SchemeULID),
			Applies: applies(w, spec, entry)},
	}
	// The storm's engine: the real runtime, or where the published runtime
	// cannot host the package, the model's, saying why. The card says what
	// ran it once it has (certifyStorm).
	stormEngine, why := opts.Factory.Engines.Published(), ""
	if p, ok := opts.Factory.Engines.Lookup(stormEngine); ok {
		if h, ok := p.(engines.PackageHost); ok {
			if err := h.CheckPackage(engines.Options{}, spec.SpecVersion); err != nil {
				stormEngine, why = opts.Factory.Engines.Model(), err.Error()
			}
		}
	}
	if opts.PgURL != "" && w.Kind != devkitworld.Postgres {
		fmt.Fprintf(progress, "stormctl: warning: --pg-url: %s is not @workflow/world-postgres, so that server is not used\n", w.ID())
	}
	if srv := w.Server(); srv != "" {
		fmt.Fprintf(progress, "certify: %s on the PostgreSQL server %s (a database of its own per check, dropped at the end)\n", w.ID(), srv)
	}
	fmt.Fprintf(progress, "certify: %s %s claims @workflow/world %s, specVersion %s\n", w.Name, w.Version, spec.World, specText(spec.SpecVersion))
	// Reachability first: a package whose store is down is the machine's
	// problem (exit 3), not a card full of UNKNOWN.
	if err := probe(ctx, entry); err != nil {
		return err
	}
	suite, err := certify.RunSuite(ctx, entry, progress)
	card.Results = append(card.Results, suite...)
	if err != nil {
		return certifyInterrupted(err)
	}
	card.Results = append(card.Results, certify.Contend(ctx, entry, opts.Load, progress)...)
	if err := ctx.Err(); err != nil {
		return certifyInterrupted(err)
	}
	certifyStorm(ctx, opts, entry, stormEngine, why, &card)
	card.JudgeRefusals()
	if err := opts.Format.Print(opts.IO.Out, card); err != nil {
		return err
	}
	if card.Outcome() != certify.Passed {
		fmt.Fprintf(opts.IO.ErrOut, "stormctl: certify %s: %s\n", opts.World, card.Summary())
		return ErrGateFailed
	}
	return nil
}

// applies says which checks the package's contract makes apply, and how
// the suite writes to it.
func applies(w *pkgworld.World, spec devkitworld.Spec, entry worlds.Entry) string {
	parts := []string{"the legacy contract (scheme ulid: ids minted by the package order and cursor the log; no fence, no guard): the suite's ulid checks apply, fenced appends and the keys the contract leaves unenforced are skipped"}
	if len(spec.Bare) > 0 {
		parts = append(parts, fmt.Sprintf("%s written without data (the package's schema drops it)", strings.Join(spec.Bare, ", ")))
	}
	if w.Kind == devkitworld.ThirdParty {
		parts = append(parts, "a WorkflowAPIError of status 409 is read as its conflict (contracts before EntityConflictError)")
	}
	if entry.Limits.Lifecycle != "" {
		parts = append(parts, certify.RunCreatedNote)
	}
	return strings.Join(parts, "; ")
}

func specText(v *int) string {
	if v == nil {
		return "(none exported)"
	}
	return fmt.Sprint(*v)
}

// certifyInterrupted types an error that ended certify's checks.
func certifyInterrupted(err error) error {
	if errors.Is(err, context.Canceled) {
		return ErrInterrupted
	}
	return err
}

// probe opens a world of entry and writes a run's run_created: a package
// that cannot (its server down, its factory throwing) is refused before
// any check, as infrastructure.
func probe(ctx context.Context, entry worlds.Entry) error {
	dir, err := os.MkdirTemp("", "stormctl-certify-probe-")
	if err != nil {
		return &InternalError{Err: err}
	}
	defer os.RemoveAll(dir)
	w, err := entry.Open(ctx, worlds.Options{Dir: dir})
	if err != nil {
		return &InfraError{Err: fmt.Errorf("certify %s: open its world: %w", entry.Name, err)}
	}
	defer w.Close()
	run := "wrun_" + ulid.Make().String()
	if err := w.CreateRun(ctx, eventlog.Run{ID: run, Scheme: eventlog.SchemeULID}); err != nil {
		return &InfraError{Err: fmt.Errorf("certify %s: create a run: %w", entry.Name, err)}
	}
	if _, err := w.Append(ctx, run, []eventlog.Draft{{Type: eventlog.RunCreated, Payload: []byte(`{"probe":true}`)}}); err != nil {
		return &InfraError{Err: fmt.Errorf("certify %s: its world cannot write a run_created (is its server up? --world-env gives it one): %w", entry.Name, err)}
	}
	return nil
}

// certifyStorm runs the short storm on entry's world under eng (the
// devkit engine: the published runtime hosting the package; the model
// where that cannot, why saying so) and puts on card its summary, or why
// there is none, and what ran it as its storm.json records it (stormRanBy):
// no engine when no storm started.
func certifyStorm(ctx context.Context, opts *CertifyOptions, entry worlds.Entry, eng, why string, card *certify.Card) {
	if opts.StormRuns == 0 {
		card.StormNote = "--storm-runs 0"
		return
	}
	out := opts.Out
	if out == "" {
		tmp, err := os.MkdirTemp("", "stormctl-certify-storm-")
		if err != nil {
			card.StormNote = "no temp directory: " + err.Error()
			return
		}
		defer os.RemoveAll(tmp)
		out = tmp + "/storm"
	}
	cfg := stormdir.Config{Worlds: []string{opts.World}, Scenarios: certifyScenarios, Conditions: []string{"main"},
		Runs: opts.StormRuns, Latency: "none", Out: out, Engine: eng}.Defaults()
	logger := opts.Factory.Logger()
	reg, stop := opts.Factory.Worlds(worlds.Setup{Progress: opts.IO.ErrOut}, logger)
	defer func() { _ = stop() }()
	reg.Register(entry)
	plan, err := storm.NewPlan(cfg, reg, opts.Factory.Engines)
	if err != nil {
		card.StormNote = "could not plan it: " + err.Error()
		return
	}
	sum, err := stormPlan(ctx, opts.IO, opts.Factory, reg, logger, plan, "certify: storm")
	card.Storm = sum
	if err != nil {
		card.StormNote = "did not finish: " + oneLine(err)
		if sum != nil {
			card.StormNote = "partial: " + card.StormNote
		}
	}
	card.Engine, card.EngineNote, card.Runtime = stormRanBy(out, sum, why, opts.Factory.Engines.Default().Name())
	if card.Engine == certify.EngineUnknown {
		fmt.Fprintf(opts.IO.ErrOut, "stormctl: warning: certify %s: %s: the card says the storm's engine is UNKNOWN\n", opts.World, card.EngineNote)
	}
}

// stormRanBy is what ran the storm in dir, as its storm.json records it,
// when a storm ran (sum, its summary, is not nil): no engine when none
// did, though storm.json is written before any world or engine opens (a
// storm whose engine failed to open names one it never ran). Else its
// engine (the default engine when it names none), with why when that
// is the model (why the real runtime did not run it), and under another
// engine the first cell's runtime (every cell of certify's storm has the
// same). A storm.json that cannot be read makes the engine
// certify.EngineUnknown, its note saying why: a card never names an
// engine it cannot show ran.
func stormRanBy(dir string, sum *reports.Summary, why, defaultEngine string) (eng, note string, rt *stormdir.Runtime) {
	if sum == nil {
		return "", "", nil
	}
	m, err := stormdir.ReadMeta(dir)
	if err != nil {
		return certify.EngineUnknown, fmt.Sprintf("the storm's storm.json could not be read (%v), so what ran it is not known", err), nil
	}
	eng = cmp.Or(m.Config.Engine, defaultEngine)
	if eng == defaultEngine {
		return eng, why, nil
	}
	for i := range m.Runtimes {
		if m.Runtimes[i].Engine == eng {
			return eng, "", &m.Runtimes[i]
		}
	}
	return eng, "", nil
}
