package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/tools/bench"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// runBench executes `stormctl bench ARGS` through NewCmdBench the way the
// root command would, with runF (nil: the real benchmark).
func runBench(ctx context.Context, runF func(context.Context, *cli.BenchOptions) error, args ...string) (code int, stdout, stderr string) {
	f, out, errOut := testFactory()
	cmd := cli.NewCmdBench(f, runF)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	code = cli.ExitCode(cmd.ExecuteContext(ctx), errOut)
	return code, out.String(), errOut.String()
}

func TestBenchFlags(t *testing.T) {
	var got *cli.BenchOptions
	capture := func(_ context.Context, o *cli.BenchOptions) error { got = o; return nil }

	code, _, stderr := runBench(t.Context(), capture, "append", "--script", "seq,fenced", "--placement", "hot",
		"--clients", "2,8", "--rounds", "5", "--duration", "2s", "--runs", "10", "--format", "markdown")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	a := got.Append
	if got.Mode != cli.BenchAppend || !slices.Equal(a.Scripts, []bench.Script{bench.ScriptSeq, bench.ScriptFenced}) ||
		!slices.Equal(a.Placements, []bench.Placement{bench.PlaceHot}) || !slices.Equal(a.Clients, []int{2, 8}) ||
		a.Rounds != 5 || a.Duration != 2*time.Second || a.Runs != 10 || got.Format != "markdown" {
		t.Errorf("append options = %+v", got)
	}

	code, _, stderr = runBench(t.Context(), capture, "forensics", "--events", "5000", "--runs", "50", "--batch", "10", "--rounds", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if fc := got.Forensics; got.Mode != cli.BenchForensics || fc.Events != 5000 || fc.Runs != 50 || fc.Batch != 10 || fc.Rounds != 1 {
		t.Errorf("forensics options = %+v", got)
	}
}

// TestBenchUsageErrors: bad values exit 2 naming the flag, before any
// cluster starts (the context is already cancelled).
func TestBenchUsageErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"append", "--script", "upsert"}, "--script"},
		{[]string{"append", "--placement", "cold"}, "--placement"},
		{[]string{"append", "--clients", "0"}, "--clients"},
		{[]string{"append", "--duration", "0s"}, "--duration"},
		{[]string{"append", "--rounds", "0"}, "--rounds"},
		{[]string{"append", "--format", "yaml"}, "--format"},
		{[]string{"forensics", "--runs", "10", "--events", "5"}, "--runs"},
		{[]string{"forensics", "--batch", "-1"}, "--batch"},
		{[]string{"forensics", "--events", "0"}, "--events"},
		{[]string{"forensics", "--rounds", "x"}, "--rounds"},
	} {
		code, _, stderr := runBench(ctx, nil, tt.args...)
		if code != cli.ExitUsage || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %s", tt.args, code, stderr, tt.want)
		}
	}
}

// skipWithoutPostgres skips when no PostgreSQL binaries are installed,
// saying so.
func skipWithoutPostgres(t *testing.T) {
	t.Helper()
	if _, err := postgres.ServerBinDir(); errors.Is(err, postgres.ErrNoPostgres) {
		t.Skipf("no PostgreSQL binaries: %v", err)
	}
}

// TestBenchSmoke runs both benchmarks end to end at tiny sizes on their own
// embedded clusters and checks the JSON carries positive figures. Nothing is
// asserted about speed.
func TestBenchSmoke(t *testing.T) {
	skipWithoutPostgres(t)
	code, stdout, stderr := runBench(t.Context(), nil, "append", "--script", "fenced", "--placement", "spread", "--runs", "20",
		"--clients", "2", "--rounds", "1", "--duration", "1s", "--format", "json")
	if code != 0 {
		t.Fatalf("bench append: exit %d: %s", code, stderr)
	}
	var ap bench.AppendResult
	if err := json.Unmarshal([]byte(stdout), &ap); err != nil {
		t.Fatalf("bench append --format json: %v\n%s", err, stdout)
	}
	if len(ap.Rows) != 1 || ap.Rows[0].Ratio <= 0 || ap.Rows[0].Pgbench.EventsPerSec <= 0 || ap.Rows[0].Stormctl.EventsPerSec <= 0 {
		t.Errorf("bench append: rows %+v", ap.Rows)
	}

	code, stdout, stderr = runBench(t.Context(), nil, "forensics", "--events", "3000", "--runs", "30", "--rounds", "1", "--format", "json")
	if code != 0 {
		t.Fatalf("bench forensics: exit %d: %s", code, stderr)
	}
	var fr bench.ForensicsResult
	if err := json.Unmarshal([]byte(stdout), &fr); err != nil {
		t.Fatalf("bench forensics --format json: %v\n%s", err, stdout)
	}
	if len(fr.Sides) != 3 || fr.Rows != 3000 || fr.Totals.Events != 3000 {
		t.Fatalf("bench forensics: %d sides, %d rows, totals %+v", len(fr.Sides), fr.Rows, fr.Totals)
	}
	for _, s := range fr.Sides {
		if s.Median <= 0 || s.Ratio <= 0 || s.PeakHeap == 0 {
			t.Errorf("bench forensics: %s has no positive figures: %+v", s.Name, s)
		}
	}
}
