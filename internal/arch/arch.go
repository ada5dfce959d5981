// Package arch declares the repository's floors, which package may import
// which, and checks a module's imports against them: a package imports
// only packages on its own floor or below. docs/architecture.md draws the
// same table; its test checks that every import of the module keeps to
// it, and that a package on no floor is named as such (a new package says
// where it stands).
package arch

import (
	"fmt"
	"slices"
	"strings"
)

// Floor is one storey of the module, bottom first in Floors.
type Floor struct {
	// Name is the floor's name, as docs/architecture.md heads it.
	Name string
	// Holds says what lives there.
	Holds string
	// Paths are the module-relative package paths on the floor: "x" is
	// the package x, "x/..." x and every package below it. The longest
	// matching path places a package (internal/storm/stormdir is not on
	// internal/storm's floor).
	Paths []string
}

// Floors are the module's floors, bottom first.
var Floors = []Floor{
	{"ground", "small helpers that know nothing of storms: a clock, plurals, redaction, crash capture, knob tables, leftovers, flag specs, test helpers", []string{"internal/base/...", "internal/arch"}},
	{"records", "the event-log contract and the run vocabulary (operations, outcomes, cell keys, run stats); a PostgreSQL connection that fails in one plain line", []string{"internal/eventlog/...", "internal/history"}},
	{"faults and forensics", "fault kinds and schedules; the forensics of one run's log and reads", []string{"internal/nemesis/...", "forensics/..."}},
	// internal/devkit/node, the Node workspace (the devkit engine's host
	// and builder, the devkit worlds' sidecar, the modules they share and
	// every install's manifests), imports nothing of the module and is run
	// by both the devkit engine (engines) and the devkit worlds' sidecar
	// (worlds/devkitworld/sidecar, here): it stands on this floor, below
	// both, although its path is under internal/devkit (the longest
	// matching path places it).
	{"stores", "the worlds (event-log stores) and their registry; production logs read back; the Node workspace the devkit worlds' sidecar and the devkit engine both run", []string{"worlds/...", "internal/prodlog/...", "internal/devkit/node"}},
	{"engines", "the engine seam and its registry; the model runtime with its conditions; the devkit engine with its scenarios; the scenarios", []string{"internal/engines/...", "internal/engine/...", "internal/devkit/...", "scenarios/..."}},
	{"analysis", "one run's outcome, verdicts, class and story (the pipeline); reports, tables and gates; the storm directory", []string{"internal/analysis/...", "reports/...", "internal/storm/stormdir/..."}},
	{"storm", "the runner: plans, admission, resume", []string{"internal/storm"}},
	{"tools", "what works on stored storms and runs: replay, shrink, schedules, fidelity, certify, bench, a stored run's evidence", []string{"internal/tools/..."}},
	{"commands", "the CLI, the binary, the GitHub Action's layout", []string{"internal/cli/...", "cmd/...", "internal/ghaction/..."}},
}

// FloorOf returns the index in floors of the floor holding pkg (a
// module-relative path), or -1 when none does.
func FloorOf(floors []Floor, pkg string) int {
	best, bestLen := -1, -1
	for i, f := range floors {
		for _, p := range f.Paths {
			base, tree := strings.CutSuffix(p, "/...")
			if pkg == base || (tree && strings.HasPrefix(pkg, base+"/")) {
				if len(base) > bestLen {
					best, bestLen = i, len(base)
				}
			}
		}
	}
	return best
}

// Violation is one import that breaks the floors, or a package on none.
type Violation struct {
	Package, Imports string
	// Why says it in a sentence.
	Why string
}

func (v Violation) String() string { return v.Why }

// Check returns every import of imports (module-relative package path to
// the module-relative paths it imports) that climbs to a higher floor, and
// every package on no floor, sorted.
func Check(floors []Floor, imports map[string][]string) []Violation {
	var out []Violation
	for pkg, deps := range imports {
		from := FloorOf(floors, pkg)
		if from < 0 {
			out = append(out, Violation{Package: pkg, Why: fmt.Sprintf("%s is on no floor: add it to arch.Floors and docs/architecture.md", pkg)})
			continue
		}
		for _, d := range deps {
			to := FloorOf(floors, d)
			if to > from {
				out = append(out, Violation{Package: pkg, Imports: d, Why: fmt.Sprintf("%s (floor %q) imports %s (floor %q, above it)", pkg, floors[from].Name, d, floors[to].Name)})
			}
		}
	}
	slices.SortFunc(out, func(a, b Violation) int { return strings.Compare(a.Why, b.Why) })
	return out
}
