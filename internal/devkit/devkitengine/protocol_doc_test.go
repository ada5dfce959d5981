package devkitengine

import (
	"github.com/stormctl/stormctl/internal/base/filetest"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestHostProtocolIsDocumented checks that docs/host-protocol.md, the
// contract between host.mjs and this engine, names every op the host
// serves and every notice it sends, and that the host's header points
// there: a protocol that lives only in a script's comments (or outside the
// repository) drifts unseen.
func TestHostProtocolIsDocumented(t *testing.T) {
	t.Parallel()
	host, err := os.ReadFile("node/host.mjs")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filetest.Repo("docs", "host-protocol.md"))
	if err != nil {
		t.Fatalf("the host's protocol page: %v", err)
	}
	if !strings.Contains(string(host), "docs/host-protocol.md") {
		t.Error("host.mjs's header does not point at docs/host-protocol.md")
	}
	table := regexp.MustCompile(`(?m)^const ops = \{([^}]*)\};`).FindSubmatch(host)
	if table == nil {
		t.Fatal("host.mjs has no `const ops = { ... };` table of the ops it serves")
	}
	var ops []string
	for _, name := range strings.Split(string(table[1]), ",") {
		if name = strings.TrimSpace(name); name != "" {
			ops = append(ops, name)
		}
	}
	if len(ops) < 5 {
		t.Fatalf("read %d ops from host.mjs's table, want its whole list: %q", len(ops), table[1])
	}
	for _, op := range ops {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(op) + ` \{`).Match(doc) {
			t.Errorf("op %q is served by host.mjs but not described in docs/host-protocol.md's Ops (a line \"  %s {...} -> ...\")", op, op)
		}
	}
	kinds := map[string]bool{}
	for _, m := range regexp.MustCompile(`notice\('([a-z]+)'`).FindAllSubmatch(host, -1) {
		kinds[string(m[1])] = true
	}
	if len(kinds) == 0 {
		t.Fatal("read no notice kinds from host.mjs")
	}
	for k := range kinds {
		if !strings.Contains(string(doc), `{"notice":"`+k+`"`) {
			t.Errorf("notice %q is sent by host.mjs but not described in docs/host-protocol.md's Notices", k)
		}
	}
}
