package worlds

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// Profile shapes the window between minting an event's id and committing it.
// It shapes timing only; it never decides whether a write succeeds.
type Profile interface {
	// Delay draws the mint-to-commit window for one write of type t.
	Delay(t eventlog.Type) time.Duration
	// MaxFactDelay bounds the window of any fact write.
	MaxFactDelay() time.Duration
	// String returns the profile's flag spelling.
	String() string
	// Windows describes the windows the profile draws, each labelled with
	// where its numbers come from (storm.json records them).
	Windows() []Window
}

// Window is one row of a profile: the mint-to-commit window of a type (or
// of a class, "decision"/"fact", for the types without a row of their own).
type Window struct {
	Type   string        `json:"type"`
	Median time.Duration `json:"median"`
	Sigma  float64       `json:"sigma,omitempty"`
	Max    time.Duration `json:"max"`
	// Source is "measured: ..." for a number from the seed's measurements,
	// "assumption: ..." for one nobody measured, "flag" for --latency fixed.
	Source string `json:"source"`
}

// Names of the profiles ParseProfile knows by name.
const (
	// AutoProfile is the default: per world, the windows the real runtime
	// has there (ResolveProfile): none drawn on a world whose published
	// package spends its own (Entry.OwnWindows), RealProfile elsewhere.
	AutoProfile = "auto"
	// RealProfile draws the windows the published runtime measured on
	// @workflow/world-postgres on this kind of machine (profiles/real.json,
	// derived with `stormctl forensics DIR --derive-latency`).
	RealProfile = "real"
	// SeedProfile draws the seed's production measurements (two rows) and
	// assumptions (the rest): the default until 2026-12-04.
	SeedProfile = "seed"
)

// ParseProfile parses a --latency value: "auto", "real", "seed", "none",
// "fixed:DUR" or "file:PATH" (a profile file, ParseProfileFile's format,
// e.g. one `stormctl forensics DIR --derive-latency PATH` derived from
// windows measured under the real runtime). "auto" parses to the profile
// it draws where it draws one (RealProfile, named so); which
// world draws none under it is ResolveProfile's.
func ParseProfile(s string, seed uint64) (Profile, error) {
	switch {
	case s == "none":
		return NoLatency(), nil
	case s == AutoProfile || s == RealProfile:
		return realProfile(RealProfile, seed)
	case s == SeedProfile:
		return newLogNormalProfile("seed", seedWindows, seed), nil
	case strings.HasPrefix(s, ProfileFilePrefix):
		return readProfileFile(s, seed)
	case strings.HasPrefix(s, "fixed:"):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "fixed:"))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("invalid --latency %q: want fixed:DURATION such as fixed:5ms", s)
		}
		return fixedProfile{name: s, d: d}, nil
	}
	return nil, fmt.Errorf("invalid --latency %q (valid: %s)", s, strings.Join(LatencyForms(), ", "))
}

// ResolveProfile is the profile a world e draws under the --latency value
// s: under "auto", none on a world whose package spends its own windows
// (e.OwnWindows: they are the real runtime's, measured, not drawn) and
// RealProfile's on the others; any other value as ParseProfile reads it.
func ResolveProfile(s string, e Entry, seed uint64) (Profile, error) {
	if s == AutoProfile && e.OwnWindows {
		return NoLatency(), nil
	}
	return ParseProfile(s, seed)
}

// LatencyForms lists the forms a --latency value takes, as ParseProfile
// reads them (help lists them from here).
func LatencyForms() []string {
	return []string{AutoProfile, RealProfile, SeedProfile, "none", "fixed:DURATION", ProfileFilePrefix + "PATH"}
}

// NoLatency is the profile of no mint-to-commit window (--latency none).
func NoLatency() Profile { return fixedProfile{name: "none"} }

// ProfileOrNone is p, or NoLatency when p is nil: a world opened without a
// latency profile writes with no mint-to-commit window. Every world (and
// the vercel world's ingest server) defaults its profile through it.
func ProfileOrNone(p Profile) Profile {
	if p == nil {
		return NoLatency()
	}
	return p
}

type fixedProfile struct {
	name string
	d    time.Duration
}

func (p fixedProfile) Delay(eventlog.Type) time.Duration { return p.d }
func (p fixedProfile) MaxFactDelay() time.Duration       { return p.d }
func (p fixedProfile) String() string                    { return p.name }
func (p fixedProfile) Windows() []Window {
	return []Window{{Type: "all", Median: p.d, Max: p.d, Source: "flag"}}
}

// logNormal is a clipped log-normal distribution given by its median, with
// where its numbers come from.
type logNormal struct {
	median, max time.Duration
	sigma       float64
	source      string
}

// seedWindows: only two rows are measured (the seed's postgres forensics:
// step_created p50 31 ms with a tail to 2 s; hook_received p50 0.4 ms); every
// other row is an assumption, labelled as such in storm.json and --help.
var seedWindows = map[string]logNormal{
	string(eventlog.StepCreated): {median: 31 * time.Millisecond, sigma: 1.1, max: 2 * time.Second,
		source: "measured: seed, postgres step_created p50 31 ms, max 2.0 s"},
	string(eventlog.HookReceived): {median: 400 * time.Microsecond, sigma: 0.5, max: 5 * time.Millisecond,
		source: "measured: seed, postgres hook_received p50 0.4 ms"},
	string(eventlog.StepStarted): {median: 2 * time.Millisecond, sigma: 0.8, max: 50 * time.Millisecond,
		source: "assumption: a step row update plus one insert"},
	"decision": {median: 8 * time.Millisecond, sigma: 1.2, max: 250 * time.Millisecond,
		source: "assumption: other decisions (hook_created, wait_created, attr_set, hook_disposed, run_*) cost an insert like a fact"},
	"fact": {median: 8 * time.Millisecond, sigma: 1.2, max: 250 * time.Millisecond,
		source: "assumption: other facts (step_completed, step_failed, wait_completed) are an insert plus an entity update"},
}

// logNormalProfile draws each type's window from its row of rows (or its
// class's row, "decision" or "fact"): the seed profile, and a profile file.
type logNormalProfile struct {
	name string
	rows map[string]logNormal
	mu   sync.Mutex
	rng  *rand.Rand
}

func newLogNormalProfile(name string, rows map[string]logNormal, seed uint64) *logNormalProfile {
	return &logNormalProfile{name: name, rows: rows, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func (p *logNormalProfile) window(t eventlog.Type) logNormal {
	if w, ok := p.rows[string(t)]; ok {
		return w
	}
	return p.rows[t.Class()]
}

func (p *logNormalProfile) Delay(t eventlog.Type) time.Duration {
	w := p.window(t)
	p.mu.Lock()
	z := p.rng.NormFloat64()
	p.mu.Unlock()
	d := time.Duration(float64(w.median) * math.Exp(w.sigma*z))
	return min(d, w.max)
}

func (p *logNormalProfile) MaxFactDelay() time.Duration {
	var m time.Duration
	for k, w := range p.rows {
		if k != "decision" { // as the seed profile always had it: every row but the decision class's
			m = max(m, w.max)
		}
	}
	return m
}

func (p *logNormalProfile) String() string { return p.name }

func (p *logNormalProfile) Windows() []Window {
	out := make([]Window, 0, len(p.rows))
	for _, k := range slices.Sorted(maps.Keys(p.rows)) {
		w := p.rows[k]
		out = append(out, Window{Type: k, Median: w.median, Sigma: w.sigma, Max: w.max, Source: w.source})
	}
	return out
}

// WindowHolder is an optional ability of a Profile: a profile that spends
// the mint-to-commit windows it draws itself, instead of the world sleeping
// them. Every world that spends its windows in this process (all but the
// devkit worlds, whose package sleeps them in its sidecar) does so through
// SpendWindow, so a WindowHolder sees each write while it is in its window
// and decides when that window ends: on an event rather than after a time.
// Tests use one (worldtest.Holder) to hold writes in their windows and
// observe, with no clock, that windows overlap, that a seal or a cancel
// lands inside one, and what a write left behind.
type WindowHolder interface {
	// HoldWindow spends the window d (> 0) drawn for one write: nil when
	// the window is over and the write goes on to commit, ctx's error when
	// ctx ended first.
	HoldWindow(ctx context.Context, d time.Duration) error
}

// SpendWindow spends a write's mint-to-commit window d drawn from p: p's
// HoldWindow when p is a WindowHolder (and d > 0), otherwise Sleep.
func SpendWindow(ctx context.Context, p Profile, d time.Duration) error {
	if h, ok := p.(WindowHolder); ok && d > 0 {
		return h.HoldWindow(ctx, d)
	}
	return clock.Sleep(ctx, d)
}
