package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/worlds/postgres"
)

// pgbench runs pgbench scripts against one server.
type pgbench struct {
	bin string
	url string
	dir string // where script files go
	// invocations numbers the runs, so that every run mints its own ids.
	invocations int
	// noCheckpoint: the user may not CHECKPOINT (checkpoint).
	noCheckpoint bool
}

// findPgbench returns the pgbench to use: bin if set, else the one next to
// the server binaries, else the one on PATH.
func findPgbench(bin string) (string, error) {
	if bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("--pgbench: %w", err)
		}
		return bin, nil
	}
	if dir, err := postgres.ServerBinDir(); err == nil {
		if p := filepath.Join(dir, "pgbench"); executableFile(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("pgbench")
	if err != nil {
		return "", fmt.Errorf("%w: pgbench not found next to the server binaries nor on PATH "+
			"(Debian/Ubuntu: apt-get install postgresql; or pass --pgbench PATH)", postgres.ErrNoPostgres)
	}
	return p, nil
}

// minAsetMajor is the first pgbench with \aset, which the fenced script
// uses.
const minAsetMajor = 14

// pgbenchMajor runs bin --version and returns its major version.
func pgbenchMajor(ctx context.Context, bin string) (int, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("%s --version: %w", bin, err)
	}
	return parsePgbenchVersion(string(out))
}

var pgbenchVersionRE = regexp.MustCompile(`\(PostgreSQL\)\s+(\d+)`)

// parsePgbenchVersion reads the major version out of pgbench --version
// ("pgbench (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)").
func parsePgbenchVersion(out string) (int, error) {
	m := pgbenchVersionRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("unrecognised pgbench --version output %q", strings.TrimSpace(out))
	}
	return strconv.Atoi(m[1])
}

func executableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// draftType is the event type of the drafts both sides append: a fact for the
// unfenced scripts, a decision for the fenced batch.
func draftType(s Script) string {
	if s == ScriptFenced {
		return "step_created"
	}
	return "step_completed"
}

// payload is every benchmark event's payload, on both sides.
const payload = `{"r":1}`

// mintedAt is the mint time pgbench sends (stormctl sends the real one; the
// value costs the same).
const mintedAt = "2026-01-01 00:00:00+00"

// paramRE matches a positional parameter of the world's SQL and its cast.
var paramRE = regexp.MustCompile(`\$(\d+)((?:::[a-z]+(?:\[\])?)?)`)

// pgbenchStatement rewrites one statement of the world for pgbench, which
// binds script variables instead of positional parameters and can compute
// integers but no strings. Every parameter becomes a variable with the same
// cast: $1 the run (:run), $10 the fence (:next_seq), the constant arrays
// $3, $5, $6, $7 and $9 bound with -D as :p3 … :p9. The three arrays that
// must differ on every attempt (ids $2, correlation ids $4, idempotency keys
// $8) become ARRAY[...] of text built from per-attempt integers: the one
// change to the world's text, evaluated once per statement.
func pgbenchStatement(sql string, s Script) (string, error) {
	n := s.Events()
	elems := func(f func(k int) string) string {
		xs := make([]string, n)
		for k := range n {
			xs[k] = f(k)
		}
		return "ARRAY[" + strings.Join(xs, ", ") + "]::text[]"
	}
	var bad []string
	out := paramRE.ReplaceAllStringFunc(sql, func(m string) string {
		sub := paramRE.FindStringSubmatch(m)
		num, cast := sub[1], sub[2]
		switch num {
		case "1":
			return ":run" + cast
		case "10":
			return ":next_seq" + cast
		case "2", "4", "8":
			if cast != "::text[]" {
				bad = append(bad, m)
				return m
			}
		}
		switch num {
		case "2":
			return elems(func(k int) string { return fmt.Sprintf(":pfx || :i%d::text", k) })
		case "4":
			return elems(func(k int) string { return fmt.Sprintf("'p' || :i%d::text", k) })
		case "8":
			return elems(func(k int) string { return fmt.Sprintf("'%s/p' || :i%d::text", draftType(s), k) })
		case "3", "5", "6", "7", "9":
			return ":p" + num + cast
		}
		bad = append(bad, m)
		return m
	})
	if len(bad) > 0 {
		return "", fmt.Errorf("bench: the world's SQL has parameters the pgbench rendering does not know (%s); update bench/pgbench.go", strings.Join(bad, ", "))
	}
	return out, nil
}

// pgbenchScript renders the pgbench script of one row and its constant
// variables. Each attempt draws its run, then numbers its events from the
// client's own counter n: ids :pfx || i, correlation ids 'p' || i,
// idempotency keys '<type>/p' || i, as the world spells them. A fenced
// attempt reads the run's counter first, with the world's own statement, and
// once more when its batch is rejected, as the world does.
func pgbenchScript(s Script, p Placement, sql postgres.WriteSQL, runs int) (string, map[string]string, error) {
	var b strings.Builder
	if p == PlaceHot {
		b.WriteString("\\set run 1\n")
	} else {
		b.WriteString("\\set run random(1, :nruns)\n")
	}
	b.WriteString("\\set n :n + 1\n")
	b.WriteString("\\set i0 :base + (:n * 1024 + :client_id) * 3\n")
	for k := 1; k < s.Events(); k++ {
		fmt.Fprintf(&b, "\\set i%d :i0 + %d\n", k, k)
	}
	var stmt string
	switch s {
	case ScriptLegacy:
		stmt = sql.LegacyInsert
	case ScriptSeq:
		stmt = sql.SeqInsert
	case ScriptFenced:
		stmt = sql.SeqFenced
		read, err := pgbenchStatement(oneLine(sql.Counters), s)
		if err != nil {
			return "", nil, err
		}
		b.WriteString(read + " \\gset\n")
	default:
		return "", nil, fmt.Errorf("bench: unknown script %q", s)
	}
	w, err := pgbenchStatement(stmt, s)
	if err != nil {
		return "", nil, err
	}
	if s == ScriptFenced {
		// The world reads the counter again after a rejection, for the
		// error's position: so does the script. The fenced statement
		// returns (id, seq) per event written and no row when rejected, which
		// \aset leaves seq at -1 for.
		read, err := pgbenchStatement(oneLine(sql.Counters), s)
		if err != nil {
			return "", nil, err
		}
		b.WriteString("\\set seq -1\n" + oneLine(w) + " \\aset\n\\if :seq < 0\n" + read + ";\n\\endif\n")
	} else {
		b.WriteString(w + ";\n")
	}

	n := s.Events()
	repeat := func(v string) string {
		xs := make([]string, n)
		for k := range xs {
			xs[k] = v
		}
		return "{" + strings.Join(xs, ",") + "}"
	}
	vars := map[string]string{
		"nruns": strconv.Itoa(runs),
		"n":     "0",
		"p3":    repeat(draftType(s)),
		"p5":    repeat(`"` + strings.ReplaceAll(payload, `"`, `\"`) + `"`),
		"p6":    repeat(`""`),
		"p7":    repeat(`""`),
		"p9":    repeat(`"` + mintedAt + `"`),
	}
	return b.String(), vars, nil
}

// oneLine folds a statement onto one line (a pgbench meta-command such as
// \gset must follow its query on the same line).
func oneLine(sql string) string { return strings.Join(strings.Fields(sql), " ") }

// pgbenchResult is what one pgbench run reported.
type pgbenchResult struct {
	TPS          float64
	Transactions int64
	Failed       int64
}

var (
	tpsRE    = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	txRE     = regexp.MustCompile(`(?m)^number of transactions actually processed: (\d+)`)
	failedRE = regexp.MustCompile(`(?m)^number of failed transactions: (\d+)`)
)

// parsePgbench reads pgbench's summary.
func parsePgbench(out string) (pgbenchResult, error) {
	var r pgbenchResult
	m := tpsRE.FindStringSubmatch(out)
	t := txRE.FindStringSubmatch(out)
	if m == nil || t == nil {
		return r, errors.New("no tps and transaction count in pgbench's output")
	}
	r.TPS, _ = strconv.ParseFloat(m[1], 64)
	r.Transactions, _ = strconv.ParseInt(t[1], 10, 64)
	if f := failedRE.FindStringSubmatch(out); f != nil {
		r.Failed, _ = strconv.ParseInt(f[1], 10, 64)
	}
	return r, nil
}

// run runs script with clients clients for secs seconds over TCP (the URL the
// world uses), prepared statements, no vacuum, one thread per core.
func (pb *pgbench) run(ctx context.Context, script string, vars map[string]string, clients, secs int) (pgbenchResult, error) {
	pb.invocations++
	f := filepath.Join(pb.dir, fmt.Sprintf("script-%d.sql", pb.invocations))
	if err := os.WriteFile(f, []byte(script), 0o600); err != nil {
		return pgbenchResult{}, fmt.Errorf("bench: pgbench script: %w", err)
	}
	defer os.Remove(f)
	vars = maps.Clone(vars)
	// Fresh ids per invocation: a ULID time prefix of now, so the ids sort
	// among the world's own, and a counter base no earlier run used.
	vars["pfx"] = "wevt_" + ulid.Make().String()[:10] + "P"
	vars["base"] = strconv.FormatInt(100_000_000_000_000+int64(pb.invocations%900)*1_000_000_000_000, 10)
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, runtime.NumCPU())),
		"-T", strconv.Itoa(secs), "-f", f}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "-D", k+"="+vars[k])
	}
	args = append(args, pb.url)
	cctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, pb.bin, args...)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return pgbenchResult{}, fmt.Errorf("bench: pgbench: %w: %s", err, tail(stderr.String()+stdout.String()))
	}
	r, err := parsePgbench(stdout.String())
	if err != nil {
		return r, fmt.Errorf("bench: %w: %s", err, tail(stdout.String()))
	}
	return r, nil
}

// cleanEnv is this process's environment without PG* variables, which would
// point pgbench elsewhere.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 1500 {
		s = "…" + s[len(s)-1500:]
	}
	return s
}
