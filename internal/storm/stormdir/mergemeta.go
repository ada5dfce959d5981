package stormdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/stormctl/stormctl/reports"
)

// ShardDir is one shard's directory and its storm.json.
type ShardDir struct {
	Dir  string
	Meta *Meta
}

// MergeInfo says what a merged storm was made of.
type MergeInfo struct {
	Shards []string `json:"shards"`
	From   []string `json:"from"`
	// Missing lists the shards of the storm that were not merged.
	Missing []string `json:"missing,omitempty"`
	// Incomplete lists the shards merged that hold fewer runs than they
	// own (they stopped early), with their counts: what they held is
	// merged, and the merged storm is partial (PartialOf).
	Incomplete []reports.ShardRuns `json:"incomplete,omitempty"`
}

// ErrNotOneStorm is returned when the directories given to merge are not
// distinct shards of one storm.
var ErrNotOneStorm = errors.New("not shards of one storm")

// MergeMeta checks that shards are distinct slices (--shard i/n, one n) of
// one storm: the same config apart from --shard, --out and --keep (seed
// included), the same conditions and cells. It returns the merged storm.json,
// with the shards in index order and Merged saying which were merged.
func MergeMeta(shards []ShardDir, out string) (*Meta, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("%w: no shard directories given", ErrNotOneStorm)
	}
	seen := map[int]string{}
	for _, s := range shards {
		sh := s.Meta.Config.Shard
		if sh.IsZero() {
			return nil, fmt.Errorf("%w: %s is a whole storm, not a shard (its %s has no shard; shards come from storm --shard i/n)", ErrNotOneStorm, s.Dir, FileStorm)
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
	m := new(Meta)
	*m = *first.Meta
	m.Schema = reports.SchemaVersion // the merge is written by this build
	m.Merged = &MergeInfo{}
	m.Config.Shard = Shard{}
	m.Config.Out = out
	m.Faults = nil // every shard's nemesis faults, shard by shard (ids repeat across shards)
	for _, s := range sorted {
		if !slices.Equal(s.Meta.Endpoints, first.Meta.Endpoints) {
			m.Endpoints = nil // the shards ran on different servers: the merge ran on no one's
		}
		if !slices.Equal(s.Meta.WorldEnv, first.Meta.WorldEnv) {
			m.WorldEnv = nil // nor on one package configuration
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
func metaDiff(a, b *Meta) []string {
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
