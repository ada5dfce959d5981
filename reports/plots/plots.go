package plots

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/stats"
)

// Plot file names inside a storm directory.
const (
	FileOutcomes   = "outcomes.png"
	FileWindows    = "windows.png"
	FileInversions = "inversions.png"
)

// Files are the plots' file names, in the order summary.md links them.
func Files() []string { return []string{FileOutcomes, FileWindows, FileInversions} }

var (
	red  = color.RGBA{R: 200, G: 60, B: 60, A: 255}
	blue = color.RGBA{R: 60, G: 90, B: 200, A: 255}
)

// Data is what the plots need beyond the summary: per cell, the
// mint-to-commit windows (milliseconds) of each event type.
type Data struct {
	Windows map[history.CellKey]map[eventlog.Type][]float64
}

// Write writes the storm's plots into dir and returns their file names:
// corrupted+silent rate per cell with its 95% Wilson interval, mint-to-commit
// windows per event type (box plots, all cells pooled), and inverted pairs
// and non-prefix reads per cell.
func Write(dir string, s *reports.Summary, d Data) ([]string, error) {
	var written []string
	for _, p := range []struct {
		name string
		make func(*reports.Summary, Data) (*plot.Plot, vg.Length, error)
	}{
		{FileOutcomes, outcomesPlot},
		{FileWindows, windowsPlot},
		{FileInversions, inversionsPlot},
	} {
		if err := save(dir, p.name, p.make, s, d); err != nil {
			return written, err
		}
		if _, err := os.Stat(filepath.Join(dir, p.name)); err == nil {
			written = append(written, p.name)
		}
	}
	return written, nil
}

// save draws and writes one plot (none when make has nothing to draw). A
// panic of the plotting library is this plot's error: a picture that
// cannot be drawn never costs the storm what it measured.
func save(dir, name string, make func(*reports.Summary, Data) (*plot.Plot, vg.Length, error), s *reports.Summary, d Data) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("plot %s: the plotting library failed: %v", name, p)
		}
	}()
	pl, width, err := make(s, d)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	if pl == nil {
		return nil
	}
	if err := pl.Save(width, 12*vg.Centimeter, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

func cellLabels(s *reports.Summary) []string {
	manyWorlds := len(s.Worlds()) > 1 // a label names its world only when there are several
	out := make([]string, len(s.Cells))
	for i, c := range s.Cells {
		out[i] = c.Scenario + "\n" + c.Condition
		if manyWorlds {
			out[i] = c.World + "\n" + out[i]
		}
	}
	return out
}

func width(cells int) vg.Length {
	return max(16*vg.Centimeter, vg.Length(cells)*3.2*vg.Centimeter)
}

func outcomesPlot(s *reports.Summary, _ Data) (*plot.Plot, vg.Length, error) {
	p := plot.New()
	p.Title.Text = "corrupted + silent runs per cell (95% Wilson interval)"
	p.Y.Label.Text = "share of runs"
	p.Y.Min, p.Y.Max = 0, 1
	vals := make(plotter.Values, len(s.Cells))
	errs := make(plotter.XYs, len(s.Cells))
	yerr := make(plotter.YErrors, len(s.Cells))
	for i, c := range s.Cells {
		n := c.Runs - c.Infra
		bad := c.Corrupted + c.Silent
		rate := 0.0
		if n > 0 {
			rate = float64(bad) / float64(n)
		}
		lo, hi := stats.Wilson(bad, n, stats.Alpha)
		vals[i] = rate
		errs[i] = plotter.XY{X: float64(i), Y: rate}
		yerr[i] = struct{ Low, High float64 }{rate - lo, hi - rate}
	}
	bars, err := plotter.NewBarChart(vals, vg.Centimeter)
	if err != nil {
		return nil, 0, err
	}
	bars.Color = red
	p.Add(bars)
	eb := &plotter.YErrorBars{XYs: errs, YErrors: yerr, LineStyle: plotter.DefaultLineStyle, CapWidth: 0.4 * vg.Centimeter}
	p.Add(eb)
	p.NominalX(cellLabels(s)...)
	return p, width(len(s.Cells)), nil
}

func windowsPlot(_ *reports.Summary, d Data) (*plot.Plot, vg.Length, error) {
	pooled := map[eventlog.Type][]float64{}
	for _, byType := range d.Windows {
		for t, ws := range byType {
			pooled[t] = append(pooled[t], ws...)
		}
	}
	types := make([]eventlog.Type, 0, len(pooled))
	for t := range pooled {
		types = append(types, t)
	}
	if len(types) == 0 {
		return nil, 0, nil
	}
	slices.Sort(types)
	p := plot.New()
	p.Title.Text = "mint-to-commit window per event type (all cells)"
	p.Y.Label.Text = "milliseconds (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	names := make([]string, len(types))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, t := range types {
		vals := make(plotter.Values, 0, len(pooled[t]))
		for _, v := range pooled[t] {
			v = max(v, 0.01) // log scale: floor at 10 µs
			vals = append(vals, v)
			lo, hi = min(lo, v), max(hi, v)
		}
		box, err := plotter.NewBoxPlot(vg.Centimeter, float64(i), vals)
		if err != nil {
			return nil, 0, err
		}
		p.Add(box)
		names[i] = fmt.Sprintf("%s\n(n=%d)", t, len(vals))
	}
	p.NominalX(names...)
	if hi <= lo {
		// One value in all: the axis would pad it by ±1, below zero on a
		// log scale. A decade either side instead.
		p.Y.Min, p.Y.Max = lo/10, hi*10
	}
	return p, width(len(types)), nil
}

func inversionsPlot(s *reports.Summary, _ Data) (*plot.Plot, vg.Length, error) {
	p := plot.New()
	p.Title.Text = "commit-order inversions and non-prefix reads per cell"
	p.Y.Label.Text = "count"
	inv := make(plotter.Values, len(s.Cells))
	np := make(plotter.Values, len(s.Cells))
	for i, c := range s.Cells {
		inv[i], np[i] = float64(c.Inversions), float64(c.NonPrefixReads)
	}
	w := 0.8 * vg.Centimeter
	a, err := plotter.NewBarChart(inv, w)
	if err != nil {
		return nil, 0, err
	}
	a.Offset = -w / 2
	a.Color = red
	b, err := plotter.NewBarChart(np, w)
	if err != nil {
		return nil, 0, err
	}
	b.Offset = w / 2
	b.Color = blue
	p.Add(a, b)
	p.Legend.Add("inverted pairs", a)
	p.Legend.Add("non-prefix reads", b)
	p.Legend.Top = true
	p.NominalX(cellLabels(s)...)
	return p, width(len(s.Cells)), nil
}
