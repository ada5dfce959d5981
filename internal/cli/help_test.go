package cli_test

import (
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/analysis/explain"
	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/internal/tools/bench"
	"github.com/stormctl/stormctl/reports/gate"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// TestHelpListsValidValues: every help text that lists the valid values of
// something lists every value the validation takes, each as a word of its
// own (class:hole is not hole): the lists come from the same tables.
func TestHelpListsValidValues(t *testing.T) {
	reg, stop := cli.DefaultWorlds(worlds.Setup{}, slog.New(slog.DiscardHandler))
	defer func() { _ = stop() }()
	var scenarioNames, presetNames []string
	for _, s := range scenarios.Registry() {
		scenarioNames = append(scenarioNames, s.Name)
	}
	for _, p := range conditions.Presets() {
		presetNames = append(presetNames, p.Name)
	}
	formats := strs(cli.Formats())
	tests := []struct {
		args   []string
		what   string
		values []string
	}{
		{[]string{"gate", "--help"}, "--max keys", gate.MaxKeys()},
		{[]string{"explain", "--help"}, "root-cause classes", explain.Classes()},
		{[]string{"storm", "--help"}, "outcomes", strs(history.Outcomes())},
		{[]string{"storm", "--help"}, "latency forms", worlds.LatencyForms()},
		{[]string{"storm", "--help"}, "nemesis kinds", strs(nemesis.Kinds)},
		{[]string{"storm", "--help"}, "worlds", reg.Names()},
		{[]string{"storm", "--help"}, "scenarios", scenarioNames},
		{[]string{"storm", "--help"}, "condition presets", presetNames},
		{[]string{"bench", "append", "--help"}, "scripts", strs(bench.Scripts)},
		{[]string{"bench", "append", "--help"}, "placements", strs(bench.Placements)},
	}
	for _, cmd := range [][]string{{"storm"}, {"report"}, {"compare"}, {"gate"}, {"fidelity"}, {"forensics"}, {"explain"}, {"bench", "append"}, {"bench", "forensics"}, {"conditions"}, {"scenarios"}, {"worlds"}, {"merge"}} {
		tests = append(tests, struct {
			args   []string
			what   string
			values []string
		}{append(cmd, "--help"), "formats", formats})
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " ")+": "+tc.what, func(t *testing.T) {
			code, stdout, stderr := run(t.Context(), tc.args...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "--format") && tc.what == "formats" {
				t.Skip("no --format")
			}
			for _, v := range tc.values {
				word := regexp.MustCompile(`(^|[^a-z0-9:+_-])` + regexp.QuoteMeta(v) + `($|[^a-z0-9:+_-])`)
				if !word.MatchString(stdout) {
					t.Errorf("%s does not list %s %q", strings.Join(tc.args, " "), tc.what, v)
				}
			}
		})
	}
}

// TestMainJobDurationAgrees: README's measured run of the main job (the
// date and duration "What it prints" gives), the line that tells a new
// user to run it, and storm --help's example of it state one figure.
func TestMainJobDurationAgrees(t *testing.T) {
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	m := regexp.MustCompile(`printed them on (\d{4}-\d\d-\d\d) \(2-core machine, (\d+m\d+s)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README's \"What it prints\" gives no date and duration of the main job's run")
	}
	date, took := m[1], m[2]
	line := regexp.MustCompile(`Run the main job [^(]*\([^)]*\)`).FindString(text)
	_, help, _ := run(t.Context(), "storm", "--help")
	help = strings.Join(strings.Fields(help), " ")
	for what, s := range map[string]string{"README's line to run the main job": line, "storm --help": help} {
		if !strings.Contains(s, took) || !strings.Contains(s, date) {
			if i := strings.Index(s, "main job"); i >= 0 {
				s = s[i:min(len(s), i+120)]
			}
			t.Errorf("%s does not state the measured %s on %s: %q", what, took, date, s)
		}
	}
}
