package storm

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/stormctl/stormctl/reports"
)

// Shard is one deterministic slice of a storm's runs (--shard i/n): shard
// Index of Count runs every cell's run indexes r with r mod Count ==
// Index-1. Every shard runs every cell, interleaved as a whole storm is, so
// all conditions of a shard share its machine's load alike; the shards
// together run each (run index, cell) exactly once. The zero Shard is the
// whole storm. In storm.json it is the text "i/n" (absent for a whole storm).
type Shard struct {
	Index int // 1-based
	Count int
}

// ParseShard parses "i/n" with 1 <= i <= n; "" is the whole storm.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, errI := strconv.Atoi(a)
	n, errN := strconv.Atoi(b)
	if !ok || errI != nil || errN != nil {
		return Shard{}, fmt.Errorf("--shard %q: want i/n, e.g. 1/4 (shard i of n, 1 <= i <= n)", s)
	}
	sh := Shard{Index: i, Count: n}
	if err := sh.checkRange(); err != nil {
		return Shard{}, err
	}
	return sh, nil
}

// check accepts the zero Shard (the whole storm) and any shard in range.
func (s Shard) check() error {
	if s.IsZero() {
		return nil
	}
	return s.checkRange()
}

// checkRange wants 1 <= i <= n. ParseShard checks it without check's
// exemption of the zero Shard: only "" is the whole storm, and "0/0" (which
// reads as the zero Shard) is a shard out of range like "0/2".
func (s Shard) checkRange() error {
	if s.Count < 1 || s.Index < 1 || s.Index > s.Count {
		return fmt.Errorf("--shard %d/%d: want i/n with 1 <= i <= n, e.g. 1/4", s.Index, s.Count)
	}
	return nil
}

// validate checks the shard against the runs per cell: a shard that would
// own no run is refused.
func (s Shard) validate(runs int) error {
	if err := s.check(); err != nil {
		return err
	}
	if !s.IsZero() && s.Count > runs {
		return fmt.Errorf("--shard %s: %d shards of --runs %d leave shards with no runs (shards take whole run indexes: use at most %d shards)", s, s.Count, runs, runs)
	}
	return nil
}

// IsZero reports whether s is the whole storm.
func (s Shard) IsZero() bool { return s == Shard{} }

// String returns "i/n", or "" for the whole storm.
func (s Shard) String() string {
	if s.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Owns reports whether the shard runs run index r (of every cell).
func (s Shard) Owns(r int) bool { return s.IsZero() || r%s.Count == s.Index-1 }

// RunsPerCell is how many of runs run indexes the shard owns.
func (s Shard) RunsPerCell(runs int) int {
	n := 0
	for r := range runs {
		if s.Owns(r) {
			n++
		}
	}
	return n
}

// MarshalText writes "i/n".
func (s Shard) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads "i/n".
func (s *Shard) UnmarshalText(b []byte) error {
	v, err := ParseShard(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Set parses a --shard value (pflag.Value).
func (s *Shard) Set(v string) error { return s.UnmarshalText([]byte(v)) }

// Type names the flag's value (pflag.Value).
func (s *Shard) Type() string { return "i/n" }

// ReadMeta reads a storm directory's storm.json whole (reports.ReadMeta),
// checking its schema version. Errors are *reports.ArtifactError naming
// the file.
func ReadMeta(dir string) (*StormMeta, error) {
	var m StormMeta
	if err := reports.ReadMeta(dir, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// LoadStorm reads a storm directory back (reports.LoadStorm) with its
// storm.json decoded whole into a StormMeta, as ReadMeta and --resume read
// it: report, compare, gate, merge and fidelity --from refuse what --resume
// refuses. Stored.Meta is the *StormMeta (nil when storm.json could not be
// read).
func LoadStorm(dir string) (*reports.Stored, error) {
	return reports.LoadStorm(dir, new(StormMeta))
}

// Header is what reading a storm back needs of storm.json (reports.Meta).
func (m *StormMeta) Header() reports.Header {
	var kinds []string
	for _, k := range m.Config.Nemesis.Kinds {
		kinds = append(kinds, string(k))
	}
	return reports.Header{Schema: m.Schema, Cells: m.Cells, Started: m.Started, Shard: m.Config.Shard.String(), Nemesis: kinds}
}

// ShardDir is one shard's directory and its storm.json.
type ShardDir struct {
	Dir  string
	Meta *StormMeta
}

// MergedMeta is the storm.json of a merged storm: the shards' common
// parameters (no shard, --out the merged directory, the earliest start) and
// which shards it was merged from.
type MergedMeta struct {
	StormMeta
	Merged MergeInfo `json:"merged"`
}

// MergeInfo says what a merged storm was made of.
type MergeInfo struct {
	Shards []string `json:"shards"`
	From   []string `json:"from"`
	// Missing lists the shards of the storm that were not merged.
	Missing []string `json:"missing,omitempty"`
}

// ErrNotOneStorm is returned when the directories given to merge are not
// distinct shards of one storm.
var ErrNotOneStorm = errors.New("not shards of one storm")

// MergeMeta checks that shards are distinct slices (--shard i/n, one n) of
// one storm: the same config apart from --shard, --out and --keep (seed
// included), the same conditions and cells. It returns the merged storm.json,
// with the shards in index order.
func MergeMeta(shards []ShardDir, out string) (*MergedMeta, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("%w: no shard directories given", ErrNotOneStorm)
	}
	seen := map[int]string{}
	for _, s := range shards {
		sh := s.Meta.Config.Shard
		if sh.IsZero() {
			return nil, fmt.Errorf("%w: %s is a whole storm, not a shard (its %s has no shard; shards come from storm --shard i/n)", ErrNotOneStorm, s.Dir, reports.FileStorm)
		}
		if prev, ok := seen[sh.Index]; ok {
			return nil, fmt.Errorf("%w: shard %s is given twice: %s and %s", ErrNotOneStorm, sh, prev, s.Dir)
		}
		seen[sh.Index] = s.Dir
	}
	first := shards[0]
	for _, s := range shards[1:] {
		if diff := metaDiff(first.Meta, s.Meta); len(diff) > 0 {
			return nil, fmt.Errorf("%w: %s (shard %s) and %s (shard %s) differ in %s",
				ErrNotOneStorm, first.Dir, first.Meta.Config.Shard, s.Dir, s.Meta.Config.Shard, strings.Join(diff, "; "))
		}
	}
	sorted := slices.Clone(shards)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Meta.Config.Shard.Index < sorted[j].Meta.Config.Shard.Index })
	m := &MergedMeta{StormMeta: *first.Meta}
	m.Config.Shard = Shard{}
	m.Config.Out = out
	m.Faults = nil // every shard's nemesis faults, shard by shard (ids repeat across shards)
	for _, s := range sorted {
		if !slices.Equal(s.Meta.Endpoints, first.Meta.Endpoints) {
			m.Endpoints = nil // the shards ran on different servers: the merge ran on no one's
		}
		m.Faults = append(m.Faults, s.Meta.Faults...)
		m.Merged.Shards = append(m.Merged.Shards, s.Meta.Config.Shard.String())
		m.Merged.From = append(m.Merged.From, s.Dir)
		if s.Meta.Started.Before(m.Started) {
			m.Started = s.Meta.Started
		}
	}
	n := first.Meta.Config.Shard.Count
	for i := 1; i <= n; i++ {
		if _, ok := seen[i]; !ok {
			m.Merged.Missing = append(m.Merged.Missing, Shard{Index: i, Count: n}.String())
		}
	}
	return m, nil
}

// metaDiff names what makes two shards' storm.json differ, ignoring what a
// shard may change (--shard, --out, --keep) and what describes the machine
// (gomaxprocs, start time). The build version is compared too: shards of
// different builds measured different code.
func metaDiff(a, b *StormMeta) []string {
	var diff []string
	if a.Schema != b.Schema {
		diff = append(diff, fmt.Sprintf("schema (%d vs %d)", a.Schema, b.Schema))
	}
	if a.Version != b.Version {
		diff = append(diff, fmt.Sprintf("version (%s vs %s)", a.Version, b.Version))
	}
	if a.Config.Shard.Count != b.Config.Shard.Count {
		diff = append(diff, fmt.Sprintf("shard count (%s vs %s)", a.Config.Shard, b.Config.Shard))
	}
	ca, cb := configFields(a.Config), configFields(b.Config)
	keys := make([]string, 0, len(ca))
	for k := range ca {
		keys = append(keys, k)
	}
	for k := range cb {
		if _, ok := ca[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !reflect.DeepEqual(ca[k], cb[k]) {
			diff = append(diff, fmt.Sprintf("config %s (%s vs %s)", k, ca[k], cb[k]))
		}
	}
	if !reflect.DeepEqual(a.Conditions, b.Conditions) {
		diff = append(diff, "condition knobs")
	}
	if !slices.Equal(a.Cells, b.Cells) {
		diff = append(diff, "cells")
	}
	return diff
}

// configFields is a config as JSON text per field, without the fields a
// shard may change.
func configFields(c Config) map[string]string {
	c.Shard, c.Out, c.Keep = Shard{}, "", false
	b, _ := json.Marshal(c)
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(b, &raw)
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[k] = string(v)
	}
	return out
}
