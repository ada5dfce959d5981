package stormdir

import (
	"fmt"
	"strconv"
	"strings"
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

// Validate checks the shard against the runs per cell: a shard that would
// own no run is refused.
func (s Shard) Validate(runs int) error {
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
