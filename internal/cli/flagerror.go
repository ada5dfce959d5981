package cli

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError types an error of cobra's flag parsing as bad usage, in words a
// user can act on. A flag value that refuses with its own *UsageError
// (Format) gives the whole message: pflag's prefix would only repeat the
// flag and value it names. A number, duration or boolean that does not
// parse says what the flag takes ("--runs \"many\": want a whole number,
// such as 24") instead of strconv's text; an unknown flag close to one the
// command has says which ("did you mean --world?").
func flagError(cmd *cobra.Command, err error) error {
	var ue *UsageError
	if errors.As(err, &ue) {
		return ue
	}
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		if want := wantOf(bad.GetFlag()); want != "" {
			return usage("--%s %q: %s", bad.GetFlag().Name, bad.GetValue(), want)
		}
	}
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() == "" {
		if near := nearestFlag(cmd, unknown.GetSpecifiedName()); near != "" {
			return usage("%s (did you mean --%s?)", err, near)
		}
	}
	return &UsageError{Err: err}
}

// wantOf says what a flag of a plain type takes, with its default as the
// example, or "" for a flag whose value says so itself (its own Set).
func wantOf(f *pflag.Flag) string {
	example := ""
	if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" {
		example = ", such as " + f.DefValue
	}
	switch f.Value.Type() {
	case "int", "int32", "int64":
		return "want a whole number" + example
	case "uint", "uint32", "uint64":
		return "want a whole number from 0 to " + strconv.FormatUint(1<<64-1, 10) + example
	case "float32", "float64":
		return "want a number" + example
	case "duration":
		return "want a duration with its unit, such as 500ms, 90s or 4m"
	case "bool":
		return "want true or false"
	}
	return ""
}

// nearestFlag is the name of the command's flag closest to name (an edit
// distance of at most 2, or name a prefix of it), "" when none is.
func nearestFlag(cmd *cobra.Command, name string) string {
	type candidate struct {
		name string
		dist int
	}
	var best []candidate
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := editDistance(name, f.Name)
		if d > 2 && !(len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			return
		}
		best = append(best, candidate{f.Name, d})
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if len(best) == 0 {
		return ""
	}
	slices.SortFunc(best, func(a, b candidate) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.name, b.name)
	})
	return best[0].name
}

// editDistance is the Damerau-Levenshtein distance of a and b (optimal
// string alignment): --wrold is one transposition from --world.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
