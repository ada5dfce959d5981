package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"
	"github.com/stormctl/stormctl/engine"
	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/scenarios"
	"github.com/stormctl/stormctl/storm"
)

// ListOptions are the options of the listing commands.
type ListOptions struct {
	IO      *IOStreams
	Factory *Factory
	Format  string
}

// listing is a table of rows, or their JSON objects.
type listing struct {
	header []string
	rows   [][]string
	json   any
}

func newListCmd(f *Factory, use, short, example string, build func(*ListOptions) listing, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use: use, Short: short, Example: example, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return printListing(opts, build(opts))
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", reports.FormatTable, "output: table, markdown or json")
	return cmd
}

func printListing(opts *ListOptions, l listing) error {
	format, err := reports.ParseFormat(opts.Format)
	if err != nil {
		return &UsageError{Err: err}
	}
	if format == reports.FormatJSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(l.json)
	}
	if format == reports.FormatMarkdown {
		fmt.Fprintf(opts.IO.Out, "| %s |\n|%s\n", strings.Join(l.header, " | "), strings.Repeat("---|", len(l.header)))
		for _, r := range l.rows {
			fmt.Fprintf(opts.IO.Out, "| %s |\n", strings.Join(r, " | "))
		}
		return nil
	}
	t := tablewriter.NewTable(opts.IO.Out, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header(l.header)
	for _, r := range l.rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}

// NewCmdConditions returns `stormctl conditions`.
func NewCmdConditions(f *Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	return newListCmd(f, "conditions", "List the condition presets and their knobs",
		`  stormctl conditions
  stormctl conditions --format json
  # any preset takes /key=value overrides in --condition:
  stormctl storm --condition seq/wake=ordered,main/guard=count-index`,
		func(*ListOptions) listing {
			l := listing{header: []string{"preset", "scheme", "fence", "on-reject", "ids", "wake", "admission", "guard", "seal", "about"}}
			var js []map[string]any
			for _, p := range storm.Presets() {
				k := p.Knobs
				seal := "-"
				if k.Scheme == eventlog.SchemeSlot {
					seal = string(k.Seal)
					if k.Sealing() {
						seal += " after " + engine.DefaultSealAfter.String()
					}
				}
				l.rows = append(l.rows, []string{p.Name, string(k.Scheme), string(k.Fence), string(k.OnReject),
					string(k.IDs), string(k.Wake), string(k.Admission), k.Guard, seal, p.About})
				js = append(js, map[string]any{"name": p.Name, "knobs": k, "about": p.About})
			}
			l.json = js
			return l
		}, runF)
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
			l := listing{header: []string{"world", "schemes", "conditions", "store"}}
			var js []map[string]any
			reg, _ := o.Factory.Worlds(WorldEndpoints{}, o.Factory.Logger())
			for _, e := range reg.Entries() {
				conds := storm.SupportedPresets(e)
				l.rows = append(l.rows, []string{e.Name, strings.Join(e.Schemes, ", "), strings.Join(conds, ", "), e.Description})
				js = append(js, map[string]any{"name": e.Name, "schemes": e.Schemes, "conditions": conds, "description": e.Description})
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
