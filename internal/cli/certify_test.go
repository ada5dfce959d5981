package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/nodetest"
	"github.com/stormctl/stormctl/internal/cli"
	"github.com/stormctl/stormctl/internal/tools/certify"
)

// TestCertifyOptions: certify's defaults and flags reach its options.
func TestCertifyOptions(t *testing.T) {
	o := parseOptions(t, cli.NewCmdCertify, "package:@x/y@1.0.0", "--world-env", "A=1", "--world-env", "B=2", "--writers", "4", "--storm-runs", "0")
	if o.World != "package:@x/y@1.0.0" || strings.Join(o.WorldEnv, ",") != "A=1,B=2" || o.Load.Writers != 4 || o.Load.Readers != certify.DefaultLoad().Readers || o.StormRuns != 0 {
		t.Errorf("options = %+v", o)
	}
}

// TestCertifyWorldLocal certifies the published @workflow/world-local
// 4.4.1 end to end (no storm): the card in JSON, its uniqueness check
// FAILED with a counterexample from real concurrent writers, no engine
// named (none ran a storm), exit 1.
func TestCertifyWorldLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and runs a published package")
	}
	nodetest.Need(t, "node", "npm")
	code, out, stderr := run(t.Context(), "certify", "package:@workflow/world-local@4.4.1", "--storm-runs", "0", "--rounds", "2", "--format", "json")
	if code == cli.ExitInfra {
		nodetest.Skip(t, "no package: %s", stderr)
	}
	if code != cli.ExitGateFailed {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	var card struct {
		Package  string           `json:"package"`
		Contract certify.Contract `json:"contract"`
		Results  []certify.Result `json:"results"`
		Outcome  certify.Outcome  `json:"outcome"`
		// No storm ran: the card names no engine and no runtime.
		Engine  *string         `json:"engine"`
		Runtime json.RawMessage `json:"runtime"`
	}
	if err := json.Unmarshal([]byte(out), &card); err != nil {
		t.Fatalf("card: %v\n%s", err, out)
	}
	if card.Package != "@workflow/world-local" || card.Outcome != certify.Failed || card.Contract.SpecVersion == nil {
		t.Errorf("card: package %q, outcome %s, contract %+v", card.Package, card.Outcome, card.Contract)
	}
	if card.Engine != nil {
		t.Errorf("card of no storm names engine %q: want none", *card.Engine)
	}
	if card.Runtime != nil {
		t.Errorf("card of no storm names runtime %s: want none", card.Runtime)
	}
	var conformance, unique int
	for _, r := range card.Results {
		if r.Section == certify.Conformance && r.Verdict == certify.Pass {
			conformance++
		}
		if r.Name == certify.CheckUnique {
			unique++
			if r.Verdict != certify.Fail || !strings.Contains(r.Detail, "step_created events (evnt_") {
				t.Errorf("%s = %s %q, want FAIL with two event ids", r.Name, r.Verdict, r.Detail)
			}
		}
	}
	if conformance == 0 || unique != 1 {
		t.Errorf("%d conformance checks passed, %d uniqueness results; want some, and one", conformance, unique)
	}
	if !strings.Contains(stderr, "stormctl: certify package:@workflow/world-local@4.4.1: FAILED") {
		t.Errorf("stderr has no verdict line:\n%s", stderr)
	}
}
