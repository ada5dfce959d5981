package certify_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stormctl/stormctl/certify"
	"github.com/stormctl/stormctl/stormdir"
)

var update = flag.Bool("update", false, "rewrite testdata/card.* with what the card prints")

// card is a card of every verdict, without a storm.
func card() certify.Card {
	two := 2
	return certify.Card{
		World: "package:@example/world@1.0.0", Package: "@example/world", Version: "1.0.0",
		Contract: certify.Contract{World: "4.1.0-beta.2", SpecVersion: &two, Scheme: "ulid", Applies: "the legacy contract"},
		Load:     certify.DefaultLoad(), Engine: "devkit",
		Runtime: &stormdir.Runtime{Engine: "devkit", Versions: map[string]string{"@workflow/core": "4.8.9"},
			Queue: "world-local 4.4.1 (composed: the package's queue delivers over HTTP)"},
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
