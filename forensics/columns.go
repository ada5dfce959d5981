package forensics

import "fmt"

// FindingColumn is one count of RunFindings as the tables show it: the
// header every table heads it with, the key RunFindings' JSON keeps it
// under, and its value. FindingColumns is the one list of them: the storm
// table (and summary.md) and forensics' table take theirs from it by
// header, and a test checks each against the JSON.
type FindingColumn struct {
	Name string
	JSON string
	Of   func(f RunFindings) int
}

// FindingColumns lists the finding columns, in the order tables draw them.
func FindingColumns() []FindingColumn {
	return []FindingColumn{
		{"reads", "reads", func(f RunFindings) int { return f.Reads }},
		{"non-prefix", "non_prefix_reads", func(f RunFindings) int { return f.NonPrefixReads }},
		{"cursor skips", "cursor_skips", func(f RunFindings) int { return f.CursorSkips }},
		{"inversions", "inversions", func(f RunFindings) int { return f.Inversions }},
		{"displaced", "displaced", func(f RunFindings) int { return f.Displaced }},
		{"gaps", "gaps", func(f RunFindings) int { return f.Gaps }},
		{"dup seqs", "duplicates", func(f RunFindings) int { return f.Duplicates }},
		{"unpositioned", "unpositioned", func(f RunFindings) int { return f.Unpositioned }},
		{"dup creates", "duplicate_creates", func(f RunFindings) int { return f.DuplicateCreates }},
		{"dup ends", "duplicate_ends", func(f RunFindings) int { return f.DuplicateEnds }},
		{"refused", "refused", func(f RunFindings) int { return f.Refused }},
	}
}

// Columns returns the finding columns called names, in that order; a name
// no column has is a bug of the caller's table.
func Columns(names ...string) []FindingColumn {
	all := FindingColumns()
	out := make([]FindingColumn, 0, len(names))
	for _, n := range names {
		i := -1
		for j, c := range all {
			if c.Name == n {
				i = j
			}
		}
		if i < 0 {
			panic(fmt.Sprintf("forensics: no finding column %q", n))
		}
		out = append(out, all[i])
	}
	return out
}
