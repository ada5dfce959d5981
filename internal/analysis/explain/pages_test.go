package explain

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/forensics"
	"github.com/stormctl/stormctl/internal/history"
)

// TestPages: every page of every fixture (testdata/classify and
// testdata/pages) is rebuilt with its recorded count and id hash, its
// events in the scheme's key order, as a replay serves them; an op that
// is no page is refused. The ambiguous-before-sure fixture's page was
// served out of order (an event settled among those committing while the
// page read came after one settled before).
func TestPages(t *testing.T) {
	t.Parallel()
	var files []string
	for _, dir := range []string{"classify", "pages"} {
		got, err := filepath.Glob(filepath.Join("testdata", dir, "*.txt"))
		if err != nil || len(got) == 0 {
			t.Fatalf("no fixtures in testdata/%s: %v", dir, err)
		}
		files = append(files, got...)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			in := readFixture(t, file)
			p := NewPages(in.Scheme, in.Final, in.Ops)
			cmp := forensics.KeyCompare(in.Scheme)
			pages := 0
			for i, op := range in.Ops {
				evs, ok := p.Page(i)
				if op.Kind != history.OpList || op.Read == nil {
					if ok || evs != nil {
						t.Errorf("op %d (%s, err %q) served as a page: %d events", i, op.Kind, op.Err, len(evs))
					}
					continue
				}
				pages++
				var h uint64
				for _, e := range evs {
					h += history.IDHash(e.ID)
				}
				if !ok || len(evs) != op.Read.N || h != op.Read.SetHash {
					t.Errorf("op %d (%s's page after %s): %d events, exact %v; recorded %d", i, op.Actor, op.After.Text(), len(evs), ok, op.Read.N)
				}
				if !slices.IsSortedFunc(evs, cmp) {
					var ids []string
					for _, e := range evs {
						ids = append(ids, e.ID)
					}
					t.Errorf("op %d (%s's page): events out of key order: %v", i, op.Actor, ids)
				}
			}
			if pages == 0 {
				t.Errorf("%s has no page", file)
			}
		})
	}
}
