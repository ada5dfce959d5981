package certify_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/internal/tools/certify"
	"github.com/stormctl/stormctl/reports"
)

var update = flag.Bool("update", false, "rewrite testdata/card.* with what the card prints")

// card is a card of every verdict, without a storm: no engine ran one.
func card() certify.Card {
	two := 2
	return certify.Card{
		World: "package:@example/world@1.0.0", Package: "@example/world", Version: "1.0.0",
		Contract:  certify.Contract{World: "4.1.0-beta.2", SpecVersion: &two, Scheme: "ulid", Applies: "the legacy contract"},
		Load:      certify.DefaultLoad(),
		StormNote: "--storm-runs 0", Stormctl: "test",
		Results: []certify.Result{
			certify.Decide(certify.Conformance, "ulid/fields", certify.Evidence{Observed: 1, Of: "run"}),
			{Section: certify.Conformance, Name: "ulid/fenced_batch", Verdict: certify.Skip, Detail: "no fenced append"},
			certify.Decide(certify.Contention, certify.CheckUnique, certify.Evidence{Counterexample: "run wrun_1, correlation id step_c0: 2 step_created events (evnt_a and evnt_b) | of 8 writers"}),
			certify.Decide(certify.Contention, certify.CheckPrefix, certify.Evidence{Of: "pairs of reads"}),
		},
	}
}

// TestCardGolden pins the card in every format.
func TestCardGolden(t *testing.T) {
	for _, f := range []struct {
		file  string
		write func(c certify.Card, b *bytes.Buffer) error
	}{
		{"card.txt", func(c certify.Card, b *bytes.Buffer) error { return c.Table(b) }},
		{"card.md", func(c certify.Card, b *bytes.Buffer) error { return c.Markdown(b) }},
		{"card.json", func(c certify.Card, b *bytes.Buffer) error { return c.JSON(b) }},
	} {
		t.Run(f.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := f.write(card(), &b); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", f.file)
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s differs (go test ./certify -run TestCardGolden -update rewrites it):\n%s", path, b.String())
			}
		})
	}
}

// TestCardStormHeading: the storm's heading names the engine that ran it
// as storm.json recorded it, and no engine when none ran: a storm not
// run names none; one whose storm.json could not be read, or that
// records no engine or no runtime, says UNKNOWN.
func TestCardStormHeading(t *testing.T) {
	t.Parallel()
	rt := &stormdir.Runtime{Engine: "devkit", Versions: map[string]string{"@workflow/core": "4.8.9"},
		Queue: "world-local 4.4.1 (composed: the package's queue delivers over HTTP)"}
	storm := &reports.Summary{}
	for _, tc := range []struct {
		name string
		card func(*certify.Card)
		text string // the table's storm section, its first line
		md   string // the markdown's
	}{
		{"not run", func(c *certify.Card) {}, "storm\n  not run: --storm-runs 0", "Storm:\n\nnot run: --storm-runs 0"},
		{"not run, the model's note unused", func(c *certify.Card) { c.EngineNote = "contract too new" }, "storm\n", "Storm:\n"},
		{"storm.json unreadable", func(c *certify.Card) {
			c.Storm, c.StormNote, c.Engine, c.EngineNote = storm, "", certify.EngineUnknown, "storm.json could not be read"
		}, "storm (UNKNOWN engine: storm.json could not be read)\n", "Storm (UNKNOWN engine: storm.json could not be read):\n"},
		{"did not finish, storm.json unreadable", func(c *certify.Card) {
			c.StormNote, c.Engine, c.EngineNote = "did not finish: boom", certify.EngineUnknown, "storm.json could not be read"
		}, "storm (UNKNOWN engine: storm.json could not be read)\n  not run: did not finish: boom", "Storm (UNKNOWN engine: storm.json could not be read):\n\nnot run: did not finish: boom"},
		{"a storm, no engine recorded", func(c *certify.Card) { c.Storm, c.StormNote = storm, "" },
			"storm (UNKNOWN engine: what ran the storm is not recorded)\n", "Storm (UNKNOWN engine: what ran the storm is not recorded):\n"},
		{"the real runtime", func(c *certify.Card) { c.Storm, c.StormNote, c.Engine, c.Runtime = storm, "", "devkit", rt },
			"storm (the real runtime, devkit engine: @workflow/core 4.8.9; queue: world-local 4.4.1 (composed: the package's queue delivers over HTTP))\n",
			"Storm (the real runtime, devkit engine: @workflow/core 4.8.9; queue: world-local 4.4.1 (composed: the package's queue delivers over HTTP)):\n"},
		{"the real runtime, none recorded", func(c *certify.Card) { c.Storm, c.StormNote, c.Engine = storm, "", "devkit" },
			"storm (the real runtime, devkit engine: UNKNOWN runtime: storm.json records none)\n", "Storm (the real runtime, devkit engine: UNKNOWN runtime: storm.json records none):\n"},
		{"the model, saying why", func(c *certify.Card) {
			c.Storm, c.StormNote, c.Engine, c.EngineNote = storm, "", "model", "contract too new"
		},
			"storm (model engine: contract too new)\n", "Storm (model engine: contract too new):\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := card()
			tc.card(&c)
			var text, md bytes.Buffer
			if err := c.Table(&text); err != nil {
				t.Fatal(err)
			}
			if err := c.Markdown(&md); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text.String(), "\n"+tc.text) {
				t.Errorf("table has no %q:\n%s", tc.text, text.String())
			}
			if !strings.Contains(md.String(), "\n"+tc.md) {
				t.Errorf("markdown has no %q:\n%s", tc.md, md.String())
			}
		})
	}
}

// TestJudgeRefusals: once the storm ran with judged rejections, the
// uniqueness line says their verdicts; without a storm, or with verdicts
// not computed, it says nothing more.
func TestJudgeRefusals(t *testing.T) {
	tp := 3
	storm := &reports.Summary{Cells: []*reports.Cell{{Rejections: 10, TruePositives: &tp, Benign: 6, UnknownVerdicts: 1}}}
	unique := certify.Result{Section: certify.Contention, Name: certify.CheckUnique, Verdict: certify.Pass, Detail: "72 contended creations"}
	for _, tc := range []struct {
		name  string
		storm *reports.Summary
		want  string
	}{
		{"judged", storm, "72 contended creations; in the storm below the package refused 10 writes: 3 true positive, 6 benign, 1 unknown"},
		{"no storm", nil, "72 contended creations"},
		{"not judged", &reports.Summary{Cells: []*reports.Cell{{Rejections: 4}}}, "72 contended creations"},
	} {
		c := certify.Card{Results: []certify.Result{unique}, Storm: tc.storm}
		c.JudgeRefusals()
		if got := c.Results[0].Detail; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
