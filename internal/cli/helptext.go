package cli

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/nemesis"
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

// nemesisKindsHelp lists the fault kinds, each run of kinds with the same
// worlds followed by those worlds: "pg-restart, pg-terminate (postgres),
// ingest-503, ...".
func nemesisKindsHelp() string {
	var parts []string
	for i, k := range nemesis.Kinds {
		item := string(k)
		if i == len(nemesis.Kinds)-1 || !slices.Equal(k.Worlds(), nemesis.Kinds[i+1].Worlds()) {
			item += " (" + strings.Join(k.Worlds(), ", ") + ")"
		}
		parts = append(parts, item)
	}
	return strings.Join(parts, ", ")
}

// worldNames are the names of the built-in worlds (registering them
// starts nothing).
func worldNames() []string {
	reg, stop := DefaultWorlds(WorldEndpoints{}, slog.New(slog.DiscardHandler))
	defer func() { _ = stop() }() // nothing was started
	return reg.Names()
}

// names turns a list of string-kinded values into their names.
func names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
