package node

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
)

// TestProtocolsAreDocumented checks that each script's protocol page (the
// contract between the script and its Go side) names every op the script
// serves and every notice it sends, and that the script's header points
// there: a protocol that lives only in a script's comments (or outside the
// repository) drifts unseen.
func TestProtocolsAreDocumented(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		script, doc string
		notices     bool // the script sends notices besides its answers
	}{
		{"host.mjs", "host-protocol.md", true},
		{"sidecar.mjs", "sidecar-protocol.md", false},
	} {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			script, err := os.ReadFile(tt.script)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := os.ReadFile(filetest.Repo("docs", tt.doc))
			if err != nil {
				t.Fatalf("the %s's protocol page: %v", tt.script, err)
			}
			if !strings.Contains(string(script), "docs/"+tt.doc) {
				t.Errorf("%s's header does not point at docs/%s", tt.script, tt.doc)
			}
			table := regexp.MustCompile(`(?m)^const ops = \{([^}]*)\};`).FindSubmatch(script)
			if table == nil {
				t.Fatalf("%s has no `const ops = { ... };` table of the ops it serves", tt.script)
			}
			var ops []string
			for _, name := range strings.Split(string(table[1]), ",") {
				if name = strings.TrimSpace(name); name != "" {
					ops = append(ops, name)
				}
			}
			if len(ops) < 5 {
				t.Fatalf("read %d ops from %s's table, want its whole list: %q", len(ops), tt.script, table[1])
			}
			for _, op := range ops {
				if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(op) + ` \{`).Match(doc) {
					t.Errorf("op %q is served by %s but not described in docs/%s's Ops (a line \"  %s {...} -> ...\")", op, tt.script, tt.doc, op)
				}
			}
			kinds := map[string]bool{}
			for _, m := range regexp.MustCompile(`notice\('([a-z]+)'`).FindAllSubmatch(script, -1) {
				kinds[string(m[1])] = true
			}
			if tt.notices && len(kinds) == 0 {
				t.Fatalf("read no notice kinds from %s", tt.script)
			}
			for k := range kinds {
				if !strings.Contains(string(doc), `{"notice":"`+k+`"`) {
					t.Errorf("notice %q is sent by %s but not described in docs/%s's Notices", k, tt.script, tt.doc)
				}
			}
		})
	}
}
