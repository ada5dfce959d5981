package fidelity_test

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/texttest"
	"github.com/stormctl/stormctl/internal/tools/fidelity"
)

func results(verdicts ...fidelity.Verdict) []fidelity.Result {
	var out []fidelity.Result
	for i, v := range verdicts {
		world := "local"
		if i%2 == 1 {
			world = "postgres"
		}
		out = append(out, fidelity.Result{World: world, Claim: "c" + string(rune('a'+i)), Text: "claim text", Reference: "ref",
			Measured: "1/2 (50%)", Verdict: v, Reason: "because " + string(v)})
	}
	return out
}

func TestReportLine(t *testing.T) {
	tests := []struct {
		name     string
		verdicts []fidelity.Verdict
		line     string
		allPass  bool
	}{
		{"all pass", []fidelity.Verdict{fidelity.Pass, fidelity.Pass}, "fidelity: 2 of 2 claims pass", true},
		{"one fails", []fidelity.Verdict{fidelity.Pass, fidelity.Fail}, "fidelity: 1 of 2 claims pass (1 fail)", false},
		{"unknown is not a pass", []fidelity.Verdict{fidelity.Pass, fidelity.Unknown}, "fidelity: 1 of 2 claims pass (1 unknown)", false},
		{"both", []fidelity.Verdict{fidelity.Fail, fidelity.Unknown, fidelity.Pass}, "fidelity: 1 of 3 claims pass (1 fail, 1 unknown)", false},
		{"nothing judged is not a pass", nil, "fidelity: 0 of 0 claims pass", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := fidelity.NewReport(results(tc.verdicts...), nil)
			if got := r.Line(); got != tc.line {
				t.Errorf("Line = %q, want %q", got, tc.line)
			}
			if r.AllPass() != tc.allPass {
				t.Errorf("AllPass = %v, want %v", r.AllPass(), tc.allPass)
			}
		})
	}
}

func TestRender(t *testing.T) {
	r := fidelity.NewReport(results(fidelity.Pass, fidelity.Fail, fidelity.Unknown), map[string]string{"local": "out/local"})
	tests := []struct {
		format string
		write  func(io.Writer) error
		want   []string // in this order
	}{
		{"table", r.Table, []string{"local (out/local)", "claim", "reference", "measured", "verdict", "PASS", "unknown",
			"  unknown cc: because unknown", "postgres\n", "FAIL", "  FAIL cb: because fail", "fidelity: 1 of 3 claims pass (1 fail, 1 unknown)\n"}},
		{"markdown", r.Markdown, []string{"#### local (out/local)\n", "| claim", "| PASS", "- unknown cc: because unknown", "#### postgres\n",
			"- FAIL cb: because fail", "**fidelity: 1 of 3 claims pass (1 fail, 1 unknown)**\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.write(&buf); err != nil {
				t.Fatal(err)
			}
			texttest.InOrder(t, "output", buf.String(), tc.want)
		})
	}
	t.Run("json", func(t *testing.T) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		var back fidelity.Report
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatalf("not a report: %v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(&back, r) {
			t.Errorf("round trip:\n%+v\nwant\n%+v", back, *r)
		}
		if !strings.Contains(buf.String(), `"verdict": "unknown"`) || !strings.Contains(buf.String(), `"schema": 1`) {
			t.Errorf("JSON lacks verdicts or schema:\n%s", buf.String())
		}
	})
}
