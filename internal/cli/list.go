package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/storm"
	"github.com/stormctl/stormctl/reports/table"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/worlds"
)

// ListOptions are the options of the listing commands.
type ListOptions struct {
	IO      *IOStreams
	Factory *Factory
	Format  Format
}

// listing is a table of rows, or their JSON objects.
type listing struct {
	header []string
	rows   [][]string
	json   any
}

// Table writes the rows as a boxed table.
func (l listing) Table(w io.Writer) error { return table.Write(w, table.Boxed, l.header, l.rows) }

// Markdown writes the rows as a markdown table, unpadded.
func (l listing) Markdown(w io.Writer) error {
	return table.Write(w, table.MarkdownCompact, l.header, l.rows)
}

// JSON writes the rows' JSON objects.
func (l listing) JSON(w io.Writer) error { return writeJSON(w, l.json) }

func newListCmd(f *Factory, use, short, example string, build func(*ListOptions) listing, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use: use, Short: short, Example: example, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return opts.Format.Print(opts.IO.Out, build(opts))
		},
	}
	addFormatFlag(cmd, &opts.Format, nil)
	return cmd
}

// NewCmdConditions returns `stormctl conditions`: a column per knob of
// engine.KnobTable, and the table's help.
func NewCmdConditions(f *Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	cmd := newListCmd(f, "conditions", "List the condition presets and their knobs",
		`  stormctl conditions
  stormctl conditions --format json
  # any preset takes /key=value overrides in --condition:
  stormctl storm --condition seq/wake=ordered,main/guard=count-index`,
		func(*ListOptions) listing {
			l := listing{header: append(append([]string{"preset"}, engine.KnobColumns()...), "about")}
			var js []map[string]any
			for _, p := range conditions.Presets() {
				l.rows = append(l.rows, append(append([]string{p.Name}, p.Knobs.Cells()...), p.About))
				js = append(js, map[string]any{"name": p.Name, "knobs": p.Knobs, "about": p.About})
			}
			l.json = js
			return l
		}, runF)
	cmd.Long = "List the condition presets and their knobs.\n\n" + knobHelp(f.Engines)
	return cmd
}

// knobHelp lists the knobs of engine.KnobTable: name, values and what each
// decides; the engine knob's values are the engine registry's names.
func knobHelp(engs *engines.Registry) string {
	var b strings.Builder
	b.WriteString("Any preset takes /key=value overrides in --condition (seq/wake=ordered), one\nper knob:\n\n")
	table := engine.KnobTable()
	width := 0
	for _, k := range table {
		width = max(width, len(k.Name))
	}
	for _, k := range table {
		fmt.Fprintf(&b, "  %-*s  %s", width, k.Name, k.Help)
		if k.SlotOnly {
			b.WriteString(" (slot only)")
		}
		values := k.Values
		if k.Name == "engine" {
			values = engs.Names()
		}
		if values != nil {
			fmt.Fprintf(&b, "\n  %-*s  valid: %s", width, "", strings.Join(values, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// NewCmdScenarios returns `stormctl scenarios`.
func NewCmdScenarios(f *Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	return newListCmd(f, "scenarios", "List the storm scenarios", "  stormctl scenarios\n  stormctl scenarios --format json",
		func(*ListOptions) listing {
			l := listing{header: []string{"scenario", "shape"}}
			var js []map[string]string
			for _, s := range scenarios.Registry() {
				l.rows = append(l.rows, []string{s.Name, s.Description})
				js = append(js, map[string]string{"name": s.Name, "description": s.Description})
			}
			l.json = js
			return l
		}, runF)
}

// NewCmdWorlds returns `stormctl worlds`.
func NewCmdWorlds(f *Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	return newListCmd(f, "worlds", "List the worlds (event-log stores), the schemes each supports and the condition presets it runs", "  stormctl worlds\n  stormctl worlds --format json",
		func(o *ListOptions) listing {
			l := listing{header: []string{"world", "schemes", "conditions", "engines", "store"}}
			var js []map[string]any
			reg, _ := o.Factory.Worlds(worlds.Setup{}, o.Factory.Logger())
			for _, e := range reg.Entries() {
				conds := storm.SupportedPresets(e)
				var engs []string
				for _, p := range o.Factory.Engines.Plugins() {
					switch {
					case p.Name() == o.Factory.Engines.Default().Name():
						engs = append(engs, p.Name())
					case slices.Contains(e.Engines, p.Name()):
						if ws, ok := p.(engines.WorldSupport); !ok {
							engs = append(engs, p.Name())
						} else if s := ws.Support(e.Name); s != "" {
							engs = append(engs, s)
						}
					}
				}
				l.rows = append(l.rows, []string{e.Name, strings.Join(e.Schemes, ", "), strings.Join(conds, ", "), strings.Join(engs, "; "), e.Description})
				js = append(js, map[string]any{"name": e.Name, "schemes": e.Schemes, "conditions": conds, "engines": engs, "description": e.Description})
			}
			l.json = js
			return l
		}, runF)
}

// NewCmdVersion returns `stormctl version`.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use: "version", Short: "Print stormctl's version", Args: cobra.NoArgs,
		Example: "  stormctl version",
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(f.IO.Out, "stormctl %s\n", f.Version)
			return err
		},
	}
}
