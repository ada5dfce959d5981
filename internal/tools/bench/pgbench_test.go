package bench

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/worlds/postgres"
)

// TestPgbenchScripts checks the rendering of the world's SQL for pgbench:
// no positional parameter survives, the statement is the world's own text
// apart from its parameters, and a fenced attempt reads the counter first
// and again after a rejection.
func TestPgbenchScripts(t *testing.T) {
	sql := postgres.WriteStatements("stormctl_render")
	world := map[Script]string{ScriptLegacy: sql.LegacyInsert, ScriptSeq: sql.SeqInsert, ScriptFenced: sql.SeqFenced}
	array := regexp.MustCompile(`ARRAY\[[^\]]*\]::text\[\]`)
	variable := regexp.MustCompile(`([^:]):[a-z_][a-z0-9_]*(::[a-z]+(\[\])?)?`)
	param := regexp.MustCompile(`\$\d+(::[a-z]+(\[\])?)?`)
	for _, s := range Scripts {
		for _, p := range Placements {
			script, vars, err := pgbenchScript(s, p, sql, 1000)
			if err != nil {
				t.Fatalf("%s/%s: %v", s, p, err)
			}
			if m := regexp.MustCompile(`\$\d`).FindString(script); m != "" {
				t.Errorf("%s/%s: positional parameter %s left in\n%s", s, p, m, script)
			}
			// Blank every parameter on both sides: what is left must be the
			// world's statement verbatim.
			start := "WITH c AS"
			if s == ScriptLegacy {
				start = "INSERT INTO"
			}
			stmt := script[strings.Index(script, start):]
			if s == ScriptFenced {
				stmt = stmt[:strings.Index(stmt, `\aset`)]
			}
			got := array.ReplaceAllString(oneLine(strings.TrimSuffix(strings.TrimSpace(stmt), ";")), "?")
			got = variable.ReplaceAllString(got, "$1?")
			want := param.ReplaceAllString(oneLine(world[s]), "?")
			if got != want {
				t.Errorf("%s/%s: statement differs from the world's:\n got %q\nwant %q", s, p, got, want)
			}
			if hasRead := strings.Contains(script, `\gset`); hasRead != (s == ScriptFenced) {
				t.Errorf("%s/%s: counter read present = %v", s, p, hasRead)
			}
			// A rejected fenced attempt reads the counter again, as the world
			// does for its error; an unfenced one never does.
			reread := regexp.MustCompile(`(?s)\\set seq -1\n[^\n]*\\aset\n\\if :seq < 0\nSELECT next_seq, last_fenced_seq [^\n]*;\n\\endif\n$`)
			if got := reread.MatchString(script); got != (s == ScriptFenced) {
				t.Errorf("%s/%s: counter read after a rejection present = %v\n%s", s, p, got, script)
			}
			if strings.Contains(script, "random(") != (p == PlaceSpread) {
				t.Errorf("%s/%s: run draw does not match the placement:\n%s", s, p, script)
			}
			for _, v := range []string{"p3", "p5", "p6", "p7", "p9", "n", "nruns"} {
				if _, ok := vars[v]; !ok {
					t.Errorf("%s/%s: no -D %s", s, p, v)
				}
			}
			if want := s.Events(); strings.Count(vars["p3"], ",")+1 != want {
				t.Errorf("%s/%s: p3 = %s, want %d types", s, p, vars["p3"], want)
			}
		}
	}
}

func TestParsePgbench(t *testing.T) {
	out := `pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: /tmp/x/script-1.sql
scaling factor: 1
query mode: prepared
number of clients: 16
number of threads: 2
maximum number of tries: 1
duration: 4 s
number of transactions actually processed: 8532
number of failed transactions: 3 (0.035%)
latency average = 7.494 ms
initial connection time = 61.006 ms
tps = 2134.948180 (without initial connection time)
`
	r, err := parsePgbench(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.TPS != 2134.948180 || r.Transactions != 8532 || r.Failed != 3 {
		t.Errorf("parsed %+v", r)
	}
	if _, err := parsePgbench("pgbench: error: connection refused"); err == nil {
		t.Error("no error for output without a summary")
	}
}

func TestConfigs(t *testing.T) {
	if err := (AppendConfig{}).Defaults().Validate(); err != nil {
		t.Errorf("default append config: %v", err)
	}
	if err := (ForensicsConfig{}).Defaults().Validate(); err != nil {
		t.Errorf("default forensics config: %v", err)
	}
	c := AppendConfig{Duration: 1500 * time.Millisecond}
	if got := c.seconds(); got != 2 {
		t.Errorf("1.5s rounds up to %d s, want 2", got)
	}
	for _, tt := range []struct {
		c    AppendConfig
		flag string
	}{
		{AppendConfig{Scripts: []Script{"upsert"}}, "--script"},
		{AppendConfig{Clients: []int{0}}, "--clients"},
		{AppendConfig{Placements: []Placement{"cold"}}, "--placement"},
		{AppendConfig{Runs: -1}, "--runs"},
	} {
		err := tt.c.Defaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tt.flag) {
			t.Errorf("%+v: %v, want an error naming %s", tt.c, err, tt.flag)
		}
	}
}

func TestParsePgbenchVersion(t *testing.T) {
	tests := []struct {
		out  string
		want int
		ok   bool
	}{
		{"pgbench (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)\n", 15, true},
		{"pgbench (PostgreSQL) 13.4\n", 13, true},
		{"pgbench (PostgreSQL) 17beta1\n", 17, true},
		{"pgbench: command not found", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := parsePgbenchVersion(tt.out)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parsePgbenchVersion(%q) = %d, %v; want %d (ok %v)", tt.out, got, err, tt.want, tt.ok)
		}
	}
}
