package cli

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
	"github.com/stormctl/stormctl/reports"
)

// deriveLatency writes forensics --derive-latency's profile: derived from
// the windows of the cells of sum the real runtime ran, as storm.json
// (meta) says.
func deriveLatency(opts *ForensicsOptions, meta *stormdir.Meta, sum *reports.Summary) error {
	var cells []*reports.Cell
	var names []string
	for _, c := range sum.Cells {
		cond, ok := meta.Conditions[c.Condition]
		if !ok || !opts.Engines.Traits(storm.EngineOf(opts.Engines, meta.Config, cond.Knobs)).Published {
			continue
		}
		cells = append(cells, c)
		names = append(names, c.CellKey.String())
	}
	if cells == nil {
		return usage("--derive-latency: no cell of %s ran on the real runtime (storm --engine devkit): the model's own windows are the profile it drew, not a measurement", opts.Dir)
	}
	source := fmt.Sprintf("stormctl forensics %s --derive-latency, cells %s", opts.Dir, strings.Join(names, ", "))
	if rt, ok := meta.RuntimeOf(cells[0].Key()); ok {
		var vs []string
		for _, pkg := range slices.Sorted(maps.Keys(rt.Versions)) {
			vs = append(vs, pkg+" "+rt.Versions[pkg])
		}
		source += "; " + strings.Join(vs, ", ")
	}
	prof, err := fidelity.DeriveProfile(cells, source)
	if err != nil {
		return usage("--derive-latency: %s: %w", opts.Dir, err)
	}
	var b bytes.Buffer
	if err := writeJSON(&b, prof); err != nil {
		return fmt.Errorf("encode the profile: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(opts.DeriveLatency), 0o755); err != nil {
		return usage("--derive-latency %s: %w", opts.DeriveLatency, err)
	}
	if err := stormdir.WriteFile(opts.DeriveLatency, b.Bytes()); err != nil {
		return usage("--derive-latency %s: %w", opts.DeriveLatency, err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "forensics: wrote %s (%d rows, from %d cells of the real runtime): use it with --latency file:%s\n", opts.DeriveLatency, len(prof.Windows), len(cells), opts.DeriveLatency)
	return nil
}
