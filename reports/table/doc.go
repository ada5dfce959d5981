// Package table draws what the commands print as tables: Write is the one
// way every command draws a table (boxed for a terminal, right-aligned
// counts, or markdown, padded or compact), Summary prints a storm's summary
// as a table or as markdown, and SummaryMarkdown and RewriteSummary make
// summary.md.
//
// Which format a command prints in is the command line's choice (cli's
// --format); this package only draws.
package table
