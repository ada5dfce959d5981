package stormdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in      string
		want    Shard
		wantErr bool
	}{
		{"", Shard{}, false},
		{"1/1", Shard{Index: 1, Count: 1}, false},
		{"1/2", Shard{Index: 1, Count: 2}, false},
		{"4/4", Shard{Index: 4, Count: 4}, false},
		{"0/2", Shard{}, true},
		{"3/2", Shard{}, true},
		{"-1/2", Shard{}, true},
		{"1/0", Shard{}, true},
		{"0/0", Shard{}, true}, // reads as the zero Shard, but only "" is the whole storm
		{"1", Shard{}, true},
		{"1/2/3", Shard{}, true},
		{"a/b", Shard{}, true},
		{" 1/2", Shard{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShard(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseShard(%q) = %+v, want an error", tc.in, got)
				}
				if !strings.Contains(err.Error(), "--shard") || !strings.Contains(err.Error(), "i/n") {
					t.Errorf("error %q does not name --shard and the form i/n", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseShard(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

// TestShardsPartitionRuns checks that the shards of n run every run index
// exactly once, and each about runs/n of them.
func TestShardsPartitionRuns(t *testing.T) {
	for _, runs := range []int{1, 2, 5, 24} {
		for n := 1; n <= runs && n <= 6; n++ {
			owners := make([]int, runs)
			for i := 1; i <= n; i++ {
				s := Shard{Index: i, Count: n}
				per := s.RunsPerCell(runs)
				if per < runs/n || per > runs/n+1 || per == 0 {
					t.Errorf("runs %d, shard %s owns %d run indexes, want %d or %d", runs, s, per, runs/n, runs/n+1)
				}
				for r := range runs {
					if s.Owns(r) {
						owners[r]++
					}
				}
			}
			for r, k := range owners {
				if k != 1 {
					t.Errorf("runs %d, %d shards: run index %d is run by %d shards, want 1", runs, n, r, k)
				}
			}
		}
	}
	if whole := (Shard{}); whole.RunsPerCell(7) != 7 || !whole.Owns(6) {
		t.Error("the zero Shard is not the whole storm")
	}
}

func TestShardInStormJSON(t *testing.T) {
	for _, tc := range []struct {
		shard Shard
		want  string // the config's "shard" field; "" for absent
	}{{Shard{}, ""}, {Shard{Index: 2, Count: 3}, `"2/3"`}} {
		b, err := json.Marshal(Config{Runs: 3, Shard: tc.shard})
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		if got := string(fields["shard"]); got != tc.want {
			t.Errorf("shard %s is written as %q, want %q", tc.shard, got, tc.want)
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil || back.Shard != tc.shard {
			t.Errorf("shard %s reads back as %+v, %v", tc.shard, back.Shard, err)
		}
	}
}

func TestMergeMeta(t *testing.T) {
	meta := func(shard string, edit func(m *Meta)) ShardDir {
		sh, err := ParseShard(shard)
		if err != nil {
			t.Fatal(err)
		}
		m := &Meta{
			Schema: reports.SchemaVersion, Version: "v1",
			Config: Config{Worlds: []string{"local"}, Scenarios: []string{"control"}, Conditions: []string{"main"},
				Runs: 4, Seed: 1, Out: "storms/" + shard, Shard: sh},
			Cells:   []history.CellKey{{World: "local", Scenario: "control", Condition: "main"}},
			Started: time.Date(2026, 1, 2, 3, 4, sh.Index, 0, time.UTC),
		}
		if edit != nil {
			edit(m)
		}
		return ShardDir{Dir: "storms/" + strings.ReplaceAll(shard, "/", "-"), Meta: m}
	}
	tests := []struct {
		name        string
		shards      []ShardDir
		wantErr     []string
		wantShards  string
		wantMissing string
	}{
		{"two of two, any order", []ShardDir{meta("2/2", nil), meta("1/2", nil)}, nil, "1/2,2/2", ""},
		{"--keep and --out may differ", []ShardDir{meta("1/2", func(m *Meta) { m.Config.Keep = true }), meta("2/2", nil)}, nil, "1/2,2/2", ""},
		{"gomaxprocs may differ", []ShardDir{meta("1/2", func(m *Meta) { m.GoMaxProcs = 64 }), meta("2/2", nil)}, nil, "1/2,2/2", ""},
		{"a missing shard", []ShardDir{meta("1/3", nil), meta("3/3", nil)}, nil, "1/3,3/3", "2/3"},
		{"different seed", []ShardDir{meta("1/2", nil), meta("2/2", func(m *Meta) { m.Config.Seed = 2 })},
			[]string{"storms/1-2", "storms/2-2", "config seed (1 vs 2)"}, "", ""},
		{"different runs", []ShardDir{meta("1/2", nil), meta("2/2", func(m *Meta) { m.Config.Runs = 6 })},
			[]string{"config runs (4 vs 6)"}, "", ""},
		{"different conditions", []ShardDir{meta("1/2", nil), meta("2/2", func(m *Meta) {
			m.Config.Conditions = []string{"seq"}
			m.Cells = []history.CellKey{{World: "local", Scenario: "control", Condition: "seq"}}
		})}, []string{"config conditions", "cells"}, "", ""},
		{"different build", []ShardDir{meta("1/2", nil), meta("2/2", func(m *Meta) { m.Version = "v2" })},
			[]string{"version (v1 vs v2)"}, "", ""},
		{"different shard counts", []ShardDir{meta("1/2", nil), meta("2/3", nil)}, []string{"shard count (1/2 vs 2/3)"}, "", ""},
		{"the same shard twice", []ShardDir{meta("1/2", nil), meta("1/2", nil)}, []string{"shard 1/2 is given twice"}, "", ""},
		{"a whole storm", []ShardDir{meta("1/2", nil), meta("", nil)}, []string{"is a whole storm, not a shard"}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := MergeMeta(tc.shards, "merged")
			if tc.wantErr != nil {
				if !errors.Is(err, ErrNotOneStorm) {
					t.Fatalf("MergeMeta = %v, want ErrNotOneStorm", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("MergeMeta: %v", err)
			}
			if got := strings.Join(m.Merged.Shards, ","); got != tc.wantShards {
				t.Errorf("merged shards %s, want %s", got, tc.wantShards)
			}
			if got := strings.Join(m.Merged.Missing, ","); got != tc.wantMissing {
				t.Errorf("missing %q, want %q", got, tc.wantMissing)
			}
			if !m.Config.Shard.IsZero() || m.Config.Out != "merged" {
				t.Errorf("merged config has shard %s, out %q; want none and \"merged\"", m.Config.Shard, m.Config.Out)
			}
			if want := time.Date(2026, 1, 2, 3, 4, 1, 0, time.UTC); !m.Started.Equal(want) {
				t.Errorf("started %s, want the earliest shard's %s", m.Started, want)
			}
		})
	}
}

// FuzzParseShard: a --shard value ParseShard refuses gets an error naming
// --shard and the form i/n; one it accepts is "" (the whole storm, the zero
// Shard) or a shard with 1 <= i <= n, which String spells back to a text
// that parses to the same Shard, as storm.json's MarshalText and
// UnmarshalText do.
func FuzzParseShard(f *testing.F) {
	for _, seed := range []string{
		"", "1/1", "1/2", "4/4", "0/2", "3/2", "-1/2", "1/0", "1", "1/2/3", "a/b", " 1/2", "+1/2", "01/04",
		"9223372036854775807/9223372036854775807", "1/9223372036854775808",
		"0/0", // found by this target: it parsed to the zero Shard and ran the whole storm
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseShard(s)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "--shard") || !strings.Contains(msg, "i/n") {
				t.Fatalf("ParseShard(%q): error %q does not name --shard and the form i/n", s, msg)
			}
			return
		}
		if s == "" {
			if !sh.IsZero() {
				t.Fatalf(`ParseShard("") = %+v, want the whole storm`, sh)
			}
			return
		}
		if sh.Index < 1 || sh.Index > sh.Count {
			t.Fatalf("ParseShard(%q) = %+v, want 1 <= i <= n", s, sh)
		}
		back, err := ParseShard(sh.String())
		if err != nil || back != sh {
			t.Fatalf("ParseShard(%q) = %+v, whose String %q parses to %+v, %v", s, sh, sh.String(), back, err)
		}
		var text Shard
		if b, err := sh.MarshalText(); err != nil || text.UnmarshalText(b) != nil || text != sh {
			t.Fatalf("ParseShard(%q) = %+v does not round-trip MarshalText/UnmarshalText: %+v", s, sh, text)
		}
	})
}

// TestMergeMetaEndpoints: a merged storm.json keeps the shards' servers
// when they all ran on the same ones, and lists none when they did not (a
// merge ran on no one shard's).
func TestMergeMetaEndpoints(t *testing.T) {
	pg := func(v string) []Endpoint { return []Endpoint{{Flag: "pg-url", Value: v}} }
	shard := func(i int, eps []Endpoint) ShardDir {
		return ShardDir{Dir: fmt.Sprintf("storms/%d-2", i), Meta: &Meta{
			Schema: reports.SchemaVersion, Version: "v1",
			Config: Config{Worlds: []string{"postgres"}, Scenarios: []string{"control"}, Conditions: []string{"main"},
				Runs: 4, Seed: 1, Shard: Shard{Index: i, Count: 2}},
			Cells:     []history.CellKey{{World: "postgres", Scenario: "control", Condition: "main"}},
			Endpoints: eps,
		}}
	}
	for _, tt := range []struct {
		name string
		a, b []Endpoint
		want []Endpoint
	}{
		{"the same server", pg("postgres://u@db/app"), pg("postgres://u@db/app"), pg("postgres://u@db/app")},
		{"two servers", pg("postgres://u@db/app"), pg("postgres://u@db2/app"), nil},
		{"one from an older stormctl", pg("postgres://u@db/app"), nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := MergeMeta([]ShardDir{shard(1, tt.a), shard(2, tt.b)}, "merged")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.Endpoints, tt.want) {
				t.Errorf("merged endpoints %+v, want %+v", m.Endpoints, tt.want)
			}
		})
	}
}
