package cli

import (
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/tools/bench"
	"github.com/stormctl/stormctl/reports/table"
)

// TestWriteBenchAppendMisses: the line after the append table lists the
// 16-client rows below the target, separated by ", ", and is absent when
// none is below. The ratios are the test's input; nothing is measured.
func TestWriteBenchAppendMisses(t *testing.T) {
	row := func(s bench.Script, p bench.Placement, clients int, ratio float64) bench.AppendRow {
		return bench.AppendRow{Script: s, Placement: p, Clients: clients, Ratio: ratio}
	}
	for _, tt := range []struct {
		name string
		rows []bench.AppendRow
		want string // the misses line; "" for none
	}{
		{"none below", []bench.AppendRow{row(bench.ScriptSeq, bench.PlaceHot, 16, 0.95)}, ""},
		{"below, but not at 16 clients", []bench.AppendRow{row(bench.ScriptSeq, bench.PlaceHot, 4, 0.5)}, ""},
		{"one below", []bench.AppendRow{row(bench.ScriptSeq, bench.PlaceHot, 16, 0.8), row(bench.ScriptSeq, bench.PlaceSpread, 16, 1.1)},
			"Below the 0.85 target at 16 clients: seq counter+insert, HOT, c=16"},
		{"two below", []bench.AppendRow{row(bench.ScriptLegacy, bench.PlaceHot, 16, 0.7), row(bench.ScriptFenced, bench.PlaceSpread, 16, 0.84)},
			"Below the 0.85 target at 16 clients: legacy insert, HOT, c=16, fenced batch of 3, SPREAD, c=16"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := &bench.AppendResult{Config: bench.AppendConfig{}.Defaults(), Rows: tt.rows}
			var b strings.Builder
			if err := writeBenchAppend(&b, res, table.Markdown); err != nil {
				t.Fatal(err)
			}
			var got string
			for line := range strings.Lines(b.String()) {
				if strings.HasPrefix(line, "Below") {
					got = strings.TrimSuffix(line, "\n")
				}
			}
			if got != tt.want {
				t.Errorf("misses line = %q, want %q\n%s", got, tt.want, b.String())
			}
		})
	}
}
