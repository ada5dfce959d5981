package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/nemesis"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/worlds"
)

// This file builds the parts of help texts that list valid values, from
// the same tables the validation reads, so that a value added to a table
// is in the help too (TestHelpListsValidValues).

// helpWidth is the width help paragraphs are wrapped to.
const helpWidth = 78

// wrap fills text's words into lines of at most helpWidth columns, the
// first after first (already written by the caller, counted) and every
// other after indent spaces.
func wrap(first int, indent int, text string) string {
	var b strings.Builder
	col := first
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case col+1+len(w) > helpWidth:
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = indent
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

// helpRow is one row of a two-column help block: "  NAME" padded to the
// second column, then text wrapped under it.
func helpRow(name string, column int, text string) string {
	head := "  " + name
	if len(head) >= column {
		head += " "
	} else {
		head += strings.Repeat(" ", column-len(head))
	}
	return head + wrap(len(head), column, text)
}

// joinOr is "a, b or c".
func joinOr(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// joinAnd is "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// nemesisKindsHelp lists the fault kinds, each run of kinds with the same
// worlds followed by those worlds (as they declare them): "pg-restart,
// pg-terminate (postgres), ingest-503, ...".
func nemesisKindsHelp(reg *worlds.Registry) string {
	offers := reg.Offers()
	var parts []string
	for i, k := range nemesis.Kinds {
		item := string(k)
		if ws := nemesis.WorldsOf(k, offers); i == len(nemesis.Kinds)-1 || !slices.Equal(ws, nemesis.WorldsOf(nemesis.Kinds[i+1], offers)) {
			item += " (" + strings.Join(ws, ", ") + ")"
		}
		parts = append(parts, item)
	}
	return strings.Join(parts, ", ")
}

// endpointFlags are the endpoint flags of reg's worlds that keep accepts
// (nil: all), as --help names them.
func endpointFlags(reg *worlds.Registry, keep func(worlds.Endpoint) bool) []string {
	var out []string
	for _, e := range reg.Endpoints() {
		if keep == nil || keep(e) {
			out = append(out, "--"+e.Name)
		}
	}
	return out
}

// runsInFlightHelp is the help of storm --runs-in-flight: the default
// bound, and each world of reg that asks for fewer (Entry.RunsPerCore).
func runsInFlightHelp(reg *worlds.Registry) string {
	var fewer string
	for _, e := range reg.Entries() {
		if e.RunsPerCore > 0 {
			fewer += fmt.Sprintf("; the %s world may ask for fewer: %d per core", e.Name, e.RunsPerCore)
		}
	}
	return fmt.Sprintf("runs in flight at once, across cells (default %d, the engine team's harness's per-PR concurrency%s)", storm.DefaultRunsInFlight, fewer)
}

// names turns a list of string-kinded values into their names.
func names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
