package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
	"github.com/stormctl/stormctl/reports"
)

// fidelityFrom judges stored storms: each --from is a storm directory or a
// directory of them (a fidelity --out). A cell found in two storms is
// refused: which one to judge would be a guess.
func fidelityFrom(opts *FidelityOptions, known []string) error {
	stored, loadErr, err := loadFrom(opts)
	if err != nil {
		return err
	}
	sum := &reports.Summary{Schema: reports.SchemaVersion}
	from := map[history.CellKey]string{}
	byWorld := map[string][]string{}
	for _, st := range stored {
		dir := st.Dir
		for _, c := range st.Summary.Cells {
			if prev, ok := from[c.Key()]; ok {
				return usage("--from: cell %s is in both %s and %s: judge one of them", c.Key(), prev, dir)
			}
			from[c.Key()] = dir
			sum.Cells = append(sum.Cells, c)
			if !slices.Contains(byWorld[c.World], dir) {
				byWorld[c.World] = append(byWorld[c.World], dir)
			}
		}
	}
	ws := opts.Worlds
	if !opts.WorldsGiven {
		ws = storedWorlds(sum, known)
	}
	storms := map[string]string{}
	for _, w := range ws {
		if d := byWorld[w]; d != nil {
			storms[w] = strings.Join(d, ", ")
		}
	}
	rep := fidelity.NewReport(fidelity.Evaluate(sum, ws...), storms)
	if opts.Out != "" {
		if err := writeFidelity(opts.Out, rep); err != nil {
			return err
		}
	}
	if err := opts.Format.Print(opts.IO.Out, rep); err != nil {
		return err
	}
	switch {
	case loadErr != nil:
		return loadErr
	case !rep.AllPass():
		return ErrGateFailed
	}
	return nil
}

// loadFrom loads every storm --from names. A storm that cannot be read at
// all is err; loadErr is the first storm read in part (what could be read
// is used, and the command exits with it after printing).
func loadFrom(opts *FidelityOptions) (stored []*stormdir.Stored, loadErr, err error) {
	dirs, err := stormDirs(opts.From)
	if err != nil {
		return nil, nil, err
	}
	for _, dir := range dirs {
		st, err := loadStorm(opts.IO, "fidelity", dir)
		if st == nil {
			return nil, nil, err
		}
		if loadErr == nil {
			loadErr = err
		}
		st.Dir = dir
		stored = append(stored, st)
	}
	return stored, loadErr, nil
}

// stormDirs expands --from: a directory with runs.jsonl is a storm; any
// other directory stands for the storms under it, one or two levels down
// (a fidelity --out holds OUT/<world>/, or with --reference devkit
// OUT/<world>/model and OUT/<world>/real).
func stormDirs(from []string) ([]string, error) {
	var out []string
	for _, dir := range trimList(from) {
		if isStorm(dir) {
			out = append(out, dir)
			continue
		}
		n := len(out)
		found, err := stormsUnder(dir, 2)
		if err != nil {
			return nil, usage("--from %s: %w", dir, err)
		}
		out = append(out, found...)
		if len(out) == n {
			return nil, usage("--from %s: not a storm directory (no %s) and no storm directories in it", dir, stormdir.FileRuns)
		}
	}
	return out, nil
}

// stormsUnder lists the storm directories under dir, depth levels down at
// most, in name order; a storm's own subdirectories are not searched.
func stormsUnder(dir string, depth int) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		switch {
		case !e.IsDir():
		case isStorm(sub):
			out = append(out, sub)
		case depth > 1:
			deeper, err := stormsUnder(sub, depth-1)
			if err != nil {
				return nil, err
			}
			out = append(out, deeper...)
		}
	}
	return out, nil
}

func isStorm(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, stormdir.FileRuns))
	return err == nil && !fi.IsDir()
}

// storedWorlds are the worlds of the summary's cells: the registry's first,
// in its order, then any other in the order met.
func storedWorlds(s *reports.Summary, known []string) []string {
	seen := s.Worlds()
	var out []string
	for _, w := range known {
		if slices.Contains(seen, w) {
			out = append(out, w)
		}
	}
	for _, w := range seen {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
