package gate_test

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/gate"
)

// gateCase is one testdata/gate/*.json fixture.
type gateCase struct {
	About    string          `json:"about"`
	Config   gate.Config     `json:"config"`
	Cells    []*reports.Cell `json:"cells"`
	Baseline []*reports.Cell `json:"baseline"`
	// Partial and BaselinePartial are what the storm and the baseline
	// miss of the runs they planned (stormdir.PartialOf), when they do.
	Partial         *reports.Partial `json:"partial"`
	BaselinePartial *reports.Partial `json:"baseline_partial"`
	Want            struct {
		Passed bool   `json:"passed"`
		Claim  string `json:"claim"`
		Cells  *int   `json:"cells"`
		Rules  *int   `json:"rules"`
		// Broken are the lines expected, in order; each must be contained
		// in the line at its position.
		Broken []string `json:"broken"`
	} `json:"want"`
}

func TestGate(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no gate fixtures: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			t.Parallel()
			var tc gateCase
			filetest.ReadJSON(t, file, &tc)
			cfg := tc.Config.Defaults()
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			var base *gate.Storm
			if tc.Baseline != nil {
				base = &gate.Storm{Summary: &reports.Summary{Schema: reports.SchemaVersion, Cells: tc.Baseline}, Partial: tc.BaselinePartial}
			}
			res := gate.Check(gate.Storm{Summary: &reports.Summary{Schema: reports.SchemaVersion, Cells: tc.Cells}, Partial: tc.Partial}, base, cfg)
			if res.Partial != tc.Partial {
				t.Errorf("result's partial = %+v, want the storm's %+v", res.Partial, tc.Partial)
			}
			lines := res.Lines()
			t.Logf("%s\n%s", tc.About, strings.Join(lines, "\n"))
			if res.Passed != tc.Want.Passed {
				t.Errorf("passed = %v, want %v", res.Passed, tc.Want.Passed)
			}
			if res.Calibration.Claim != tc.Want.Claim {
				t.Errorf("calibration = %q, want %q", res.Calibration.Claim, tc.Want.Claim)
			}
			if w := tc.Want.Cells; w != nil && res.Cells != *w {
				t.Errorf("cells = %d, want %d", res.Cells, *w)
			}
			if w := tc.Want.Rules; w != nil && res.Rules != *w {
				t.Errorf("rules = %d, want %d", res.Rules, *w)
			}
			if res.Passed {
				if len(lines) != 1 || !strings.HasPrefix(lines[0], "gate passed: ") {
					t.Errorf("a pass prints one line starting \"gate passed: \", got %q", lines)
				}
				return
			}
			if len(lines) != len(tc.Want.Broken) {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.Want.Broken), strings.Join(lines, "\n"))
			}
			for i, w := range tc.Want.Broken {
				if !strings.Contains(lines[i], w) {
					t.Errorf("line %d = %q, want it to contain %q", i+1, lines[i], w)
				}
			}
		})
	}
}

func TestGateConfig(t *testing.T) {
	t.Parallel()
	rate := func(r float64) *float64 { return &r }
	tests := []struct {
		name    string
		cfg     gate.Config
		want    gate.Config // after Defaults
		wantErr []string    // Validate's message contains each
	}{
		{name: "no rules: the defaults", cfg: gate.Config{}, want: gate.Default()},
		{
			name: "--conditions alone keeps its globs with the default rules",
			cfg:  gate.Config{Conditions: []string{"seq+callsite*"}},
			want: func() gate.Config {
				d := gate.Default()
				d.Conditions = []string{"seq+callsite*"}
				return d
			}(),
		},
		{
			name: "a rule replaces the defaults, all cells",
			cfg:  gate.Config{RequireRejections: true},
			want: gate.Config{RequireRejections: true},
		},
		{
			name:    "key twice",
			cfg:     gate.Config{Max: []gate.MaxRule{{Key: "corrupted", Max: 0}, {Key: "corrupted", Max: 1}}},
			want:    gate.Config{Max: []gate.MaxRule{{Key: "corrupted", Max: 0}, {Key: "corrupted", Max: 1}}},
			wantErr: []string{"--max", "corrupted", "twice"},
		},
		{
			name:    "infra rate above 1",
			cfg:     gate.Config{MaxInfraRate: rate(5)},
			want:    gate.Config{MaxInfraRate: rate(5)},
			wantErr: []string{"--max-infra-rate", "5", "[0, 1]"},
		},
		{
			name: "--min-decided alone keeps the default rules",
			cfg:  gate.Config{MinDecided: rate(0.5)},
			want: func() gate.Config {
				d := gate.Default()
				d.MinDecided = rate(0.5)
				return d
			}(),
		},
		{
			name:    "--min-decided above 1",
			cfg:     gate.Config{MinDecided: rate(1.5)},
			want:    func() gate.Config { d := gate.Default(); d.MinDecided = rate(1.5); return d }(),
			wantErr: []string{"--min-decided", "1.5", "[0, 1]"},
		},
		{
			name:    "--min-decided negative",
			cfg:     gate.Config{MinDecided: rate(-0.1), RequireRejections: true},
			want:    gate.Config{MinDecided: rate(-0.1), RequireRejections: true},
			wantErr: []string{"--min-decided", "-0.1"},
		},
		{
			name: "--only-whole alone: no default rules",
			cfg:  gate.Config{OnlyWhole: true},
			want: gate.Config{OnlyWhole: true},
		},
		{
			name:    "--only-whole with a rule",
			cfg:     gate.Config{OnlyWhole: true, NoWorse: true},
			want:    gate.Config{OnlyWhole: true, NoWorse: true},
			wantErr: []string{"--only-whole", "drop the other rules"},
		},
		{
			name:    "--only-whole with --conditions",
			cfg:     gate.Config{OnlyWhole: true, Conditions: []string{"seq*"}},
			want:    gate.Config{OnlyWhole: true, Conditions: []string{"seq*"}},
			wantErr: []string{"--only-whole", "--conditions"},
		},
		{
			name:    "empty glob",
			cfg:     gate.Config{Conditions: []string{""}, ControlClean: true},
			want:    gate.Config{Conditions: []string{""}, ControlClean: true},
			wantErr: []string{"--conditions"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.cfg.Defaults()
			if tc.want.MinDecided == nil { // Defaults always sets the evidence rule's share
				tc.want.MinDecided = rate(reports.DefaultMinDecided)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(tc.want)
			if string(a) != string(b) {
				t.Errorf("Defaults() = %s, want %s", a, b)
			}
			err := got.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Errorf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseMaxRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    gate.MaxRule
		wantErr []string
	}{
		{in: "corrupted=0", want: gate.MaxRule{Key: "corrupted", Max: 0}},
		{in: "corrupted+silent=2", want: gate.MaxRule{Key: "corrupted+silent", Max: 2}},
		{in: " infra = 3 ", want: gate.MaxRule{Key: "infra", Max: 3}},
		{in: "class:stale-prefix=0", want: gate.MaxRule{Key: "class:stale-prefix", Max: 0}},
		{in: "class:unknown=1", want: gate.MaxRule{Key: "class:unknown", Max: 1}},
		{in: "class:duplicate-create=0", want: gate.MaxRule{Key: "class:duplicate-create", Max: 0}},
		{in: "class:bogus=0", wantErr: []string{"--max", "class:bogus", "class:stale-prefix", "class:cursor-skip", "class:wake-order", "class:duplicate-create"}},
		{in: "bogus=1", wantErr: []string{"--max", "bogus", "corrupted", "corrupted+silent", "infra"}},
		{in: "corrupted", wantErr: []string{"--max", "KEY=N"}},
		{in: "corrupted=-1", wantErr: []string{"--max", "N >= 0"}},
		{in: "corrupted=many", wantErr: []string{"--max", "KEY=N"}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := gate.ParseMaxRule(tc.in)
			if len(tc.wantErr) == 0 {
				if err != nil || got != tc.want {
					t.Errorf("ParseMaxRule(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseMaxRule(%q) = %+v, want an error", tc.in, got)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// FuzzParseMaxRule: a --max value ParseMaxRule refuses gets an error naming
// --max and the value as given; a rule it accepts has a known key and N >= 0
// (a Config holding it validates) and spells back, through String and
// MarshalText, to a text that parses to the same rule.
func FuzzParseMaxRule(f *testing.F) {
	for _, seed := range []string{
		"corrupted=0", "corrupted+silent=2", " infra = 3 ", "class:stale-prefix=0", "class:unknown=1",
		"class:bogus=0", "bogus=1", "corrupted", "corrupted=-1", "corrupted=many", "corrupted=+4", "corrupted=5%",
		"=1", "corrupted==1", "corrupted=9223372036854775807", "corrupted=9223372036854775808", "silent=0x10", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := gate.ParseMaxRule(s)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "--max") || !strings.Contains(msg, strconv.Quote(s)) {
				t.Fatalf("ParseMaxRule(%q): error %q does not name --max and the value", s, msg)
			}
			return
		}
		if err := (gate.Config{Max: []gate.MaxRule{r}}).Validate(); err != nil || r.Max < 0 {
			t.Fatalf("ParseMaxRule(%q) = %+v, which does not validate: %v", s, r, err)
		}
		if back, err := gate.ParseMaxRule(r.String()); err != nil || back != r {
			t.Fatalf("ParseMaxRule(%q) = %+v, whose String %q parses to %+v, %v", s, r, r.String(), back, err)
		}
		var text gate.MaxRule
		if b, err := r.MarshalText(); err != nil || text.UnmarshalText(b) != nil || text != r {
			t.Fatalf("ParseMaxRule(%q) = %+v does not round-trip MarshalText/UnmarshalText: %+v", s, r, text)
		}
	})
}
