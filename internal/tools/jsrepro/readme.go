package jsrepro

import (
	"fmt"
	"strings"
)

// readme is the directory's README: what fails, why (the layer and its
// evidence), how to run it, how to check a fix, how to drop it into a
// vercel/workflow checkout.
func readme(f Fixture, testName string) string {
	var b strings.Builder
	core := f.Versions["@workflow/core"]
	run, install := "node --test", "npm install"
	if f.Form == Vitest {
		run = "npx vitest run"
	}
	fmt.Fprintf(&b, "# %s\n\n", f.Title)
	fmt.Fprintf(&b, "Written by `stormctl shrink` from %s. %s\n\n", f.Source, f.Shrunk)
	fmt.Fprintf(&b, "One delivery of run `%s` to `@workflow/core`'s own flow handler\n", f.Case.RunID)
	fmt.Fprintf(&b, "(`workflowEntrypoint`), carrying core's recovery budget (%d divergences) as the\n", f.Case.Recovery)
	fmt.Fprintf(&b, "delivery that failed the run did, against a\n")
	fmt.Fprintf(&b, "small in-memory World written in `%s` that holds the %d events the\n", testName, len(f.Case.Log))
	fmt.Fprintf(&b, "delivery read (`schedule.json`, each as the World package stored it). The test\n")
	fmt.Fprintf(&b, "asserts that the runtime replays that log without failing the run (with\n")
	fmt.Fprintf(&b, "CORRUPTED_EVENT_LOG or any other code) and without asking the World for what the\n")
	fmt.Fprintf(&b, "schedule does not say (that is inconclusive, not a pass).\n\n")
	fmt.Fprintf(&b, "## Layer: %s (%s)\n\n", f.Layer, f.Class)
	switch f.Layer {
	case "world":
		b.WriteString("The World accepted a write it should have refused: the log holds one entity\n" +
			"created twice, which no correct World stores. The runtime's failure on it is the\n" +
			"consequence. The fix belongs in the World; this test, which holds the log the World\n" +
			"left, passes only on a runtime that tolerates the duplicate (upstream's #3381 asks\n" +
			"replay to ignore a duplicate event of the same kind).\n\n")
	case "engine":
		b.WriteString("The runtime decided from a stale view of the log: a decision the log holds\n" +
			"contradicts what the runtime now derives from the events before it.\n\n")
	default:
		b.WriteString("The run's class does not name a layer.\n\n")
	}
	for _, e := range f.Evidence {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	if len(f.Evidence) > 0 {
		b.WriteString("\n")
	}
	elsewhere := "`npm install --prefix DIR`, then `node --test DIR`"
	if f.Form == Vitest {
		elsewhere = "`npm install --prefix DIR`, then `(cd DIR && npx vitest run)`"
	}
	fmt.Fprintf(&b, "## Run it\n\nIn this directory (from elsewhere: %s):\n\n```sh\n%s\n%s\n```\n\n", elsewhere, install, run)
	if core == "" {
		core = "(version not recorded)"
	}
	fmt.Fprintf(&b, "On `@workflow/core` %s (the runtime the run came from; `package.json` pins it)\n", core)
	fmt.Fprintf(&b, "the test fails with that runtime's own text:\n\n```\n%s\n```\n\n", f.Failure.Headline())
	b.WriteString("## Check a fix\n\n")
	b.WriteString("Install the runtime to check instead, then run the test again; it passes when\n" +
		"that runtime replays this log without failing the run:\n\n")
	fmt.Fprintf(&b, "```sh\nnpm install @workflow/core@<version>            # a published one\nnpm install /path/to/workflow/packages/core       # a local build (pnpm build first)\n%s\n```\n\n", run)
	b.WriteString("The World declares the contract (`specVersion`) the installed runtime's\n" +
		"`@workflow/world` names as current; the events keep the spec they were written\n" +
		"under. `workflow.js` is the workflow code as the runtime's builder compiled it\n" +
		"for core's VM (`source/` holds the scenario's TypeScript, for reading). Only the\n" +
		"workflow code is loaded, not the step bodies: a runtime that runs steps inline\n" +
		"(5.0) records them failed in this World, and the test judges nothing but\n" +
		"whether the log is declared corrupted.\n\n")
	b.WriteString("## In a vercel/workflow checkout\n\n")
	b.WriteString("Copy this directory next to core's own tests and run it with vitest there:\n\n")
	fmt.Fprintf(&b, "```sh\ncp -r . /path/to/workflow/packages/core/src/repro/%s\ncd /path/to/workflow/packages/core/src/repro/%s\nnpm install          # its own @workflow/core %s and vitest, beside the checkout's\nnpx vitest run\n```\n\n", strings.ToLower(f.Case.RunID), strings.ToLower(f.Case.RunID), core)
	b.WriteString("The test imports `@workflow/core` by name, from the directory's own install:\n" +
		"to run it against the checkout's build, install that build there (`npm install ../../..`\n" +
		"from `src/repro/<run>`, after `pnpm build`).\n")
	return b.String()
}
