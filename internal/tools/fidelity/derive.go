package fidelity

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/worlds"
)

// This file derives a latency profile for the model from the mint-to-commit
// windows measured under the real runtime: per event type a log-normal with
// the measured median, a sigma that puts its 90th percentile where the
// measured one is, and the measured maximum as its clip; and one row per
// class (decision, fact) pooled over the class's types, for the types the
// real runs never wrote.

// z90 is the standard normal's 90th percentile: a log-normal with median m
// and sigma s has its 90th percentile at m·exp(z90·s).
const z90 = 1.2815515655446004

// minWindow is the smallest median a derived row takes: a window measured
// at 0 (a commit clock coarser than the mint) still takes some time.
const minWindow = time.Microsecond

// ErrNoRealWindows is returned by DeriveProfile when no cell has a window:
// there is nothing to derive from.
var ErrNoRealWindows = errors.New("no mint-to-commit window measured in the cells given")

// DeriveProfile derives a latency profile file from the windows of cells
// (the real runtime's), naming source in every row. Types the model does
// not write are left out, and source says which. Cells' per-type
// quantiles are pooled weighted by their counts, in logarithms (a pooled
// median of log-normal samples), the maximum is the largest seen.
func DeriveProfile(cells []*reports.Cell, source string) (worlds.ProfileFile, error) {
	type acc struct {
		n            int
		logP50, logR float64 // Σ n·ln p50, Σ n·ln(p90/p50)
		max          time.Duration
	}
	byKey := map[string]*acc{}
	add := func(key string, w forensics.Window) {
		a := byKey[key]
		if a == nil {
			a = &acc{}
			byKey[key] = a
		}
		p50, p90 := max(w.P50, minWindow), max(w.P90, minWindow)
		p90 = max(p90, p50)
		a.n += w.N
		a.logP50 += float64(w.N) * math.Log(float64(p50))
		a.logR += float64(w.N) * math.Log(float64(p90)/float64(p50))
		a.max = max(a.max, w.Max, p90)
	}
	skipped := map[string]bool{}
	for _, c := range cells {
		for t, w := range c.Windows {
			switch {
			case w.N == 0:
				continue
			case !t.Valid():
				// A type the model never writes (the real runtime's
				// run_started, run_cancelled): no row, and no weight in
				// a class it does not belong to.
				skipped[string(t)] = true
				continue
			}
			add(string(t), w)
			add(t.Class(), w)
		}
	}
	if len(skipped) > 0 {
		source += "; left out, types the model does not write: " + strings.Join(slices.Sorted(maps.Keys(skipped)), ", ")
	}
	if len(byKey) == 0 {
		return worlds.ProfileFile{}, ErrNoRealWindows
	}
	var missing []string
	for _, class := range []string{"decision", "fact"} {
		if byKey[class] == nil {
			missing = append(missing, class)
		}
	}
	if missing != nil {
		return worlds.ProfileFile{}, fmt.Errorf("no %s window measured: every type needs one (storm step-storm, whose runs write both)", strings.Join(missing, " or "))
	}
	rows := make([]worlds.Window, 0, len(byKey))
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		a := byKey[key]
		median := time.Duration(math.Exp(a.logP50 / float64(a.n))).Round(time.Microsecond)
		sigma := a.logR / float64(a.n) / z90
		median = max(median, minWindow)
		what := "measured"
		if key == "decision" || key == "fact" {
			what = "measured, pooled over the class's types"
		}
		rows = append(rows, worlds.Window{Type: key, Median: median, Sigma: round3(sigma), Max: max(a.max, median),
			Source: fmt.Sprintf("%s: %s (n %d)", what, source, a.n)})
	}
	return worlds.NewProfileFile(source, rows), nil
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
