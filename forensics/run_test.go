package forensics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/fuzzbytes"
	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

// t0 is the origin of the millisecond times the fixtures use.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestAnalyzeRunFixtures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "analyze", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures in testdata/analyze: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			fx, err := parseFixture(string(raw))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			// The final log may come in any order: the findings must not
			// depend on it.
			orders := map[string][]eventlog.Event{
				"as stored": fx.in.Final,
				"reversed":  reversed(fx.in.Final),
			}
			for name, final := range orders {
				in := fx.in
				in.Final = final
				if got := AnalyzeRun(in).Findings; !reflect.DeepEqual(got, fx.want) {
					t.Errorf("final log %s: AnalyzeRun = %s, want %s", name, findings(got), findings(fx.want))
				}
				if fx.withoutImplicit == nil {
					continue
				}
				in.Ops = slices.DeleteFunc(slices.Clone(in.Ops), func(op history.Op) bool { return op.Implicit })
				if got := AnalyzeRun(in).Findings; !reflect.DeepEqual(got, *fx.withoutImplicit) {
					t.Errorf("final log %s, implicit appends left out: AnalyzeRun = %s, want %s", name, findings(got), findings(*fx.withoutImplicit))
				}
			}
		})
	}
}

// findings prints f with its slot findings.
func findings(f RunFindings) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func reversed(evs []eventlog.Event) []eventlog.Event {
	out := slices.Clone(evs)
	slices.Reverse(out)
	return out
}

func TestParseFixtureRejectsBadInput(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"no scheme":     "want\nevent a\n",
		"no want":       "scheme ulid\nevent a\n",
		"unknown count": "scheme ulid\nwant skipped=1\n",
		"unknown item":  "scheme ulid\nwant\nevnt a\n",
		"undeclared id": "scheme ulid\nwant\nevent a\nlist inv-1 after=- start=1 read=a,b\n",
		"bad append":    "scheme ulid\nwant\nappend inv-1 a\n",
		"empty append":  "scheme ulid\nwant\nappend inv-1 implicit\n",
		"seal no noop":  "scheme slot\nwant\nevent a slot=1\nseal inv-1 a@5\n",
		"hole no slot":  "scheme slot\nwant\nhole inv-1 above=2 start=1\n",
		"bad slot want": "scheme slot\nwant slot.holes=1\n",
		"bad fill time": "scheme slot\nwant slot.fill_ms=x\n",
	}
	for name, text := range bad {
		if _, err := parseFixture(text); err == nil {
			t.Errorf("%s: parseFixture accepted %q", name, text)
		}
	}
}

func TestCommitTimes(t *testing.T) {
	t.Parallel()
	ops := []history.Op{
		{Kind: history.OpAppend, Wrote: []history.OpEvent{{ID: "a", CommittedAt: at(1)}, {ID: "b", CommittedAt: at(2)}}},
		{Kind: history.OpAppendFenced, Wrote: []history.OpEvent{{ID: "c"}}},                       // rejected: nothing committed
		{Kind: history.OpAppend, Wrote: []history.OpEvent{{ID: "", CommittedAt: at(9)}}},          // failed: no id
		{Kind: history.OpList, Read: &history.ReadSummary{N: 1}, After: eventlog.Cursor{ID: "a"}}, // reads carry no commits
	}
	got := CommitTimes(ops)
	if len(got) != 2 || !got["a"].Equal(at(1)) || !got["b"].Equal(at(2)) {
		t.Errorf("CommitTimes = %v, want a@1ms and b@2ms only", got)
	}
}

// TestRunFindingsAdd: Add sums every count of RunFindings (set by
// reflection, so a checker's new field that Add forgets fails here) and
// the slot findings, leaving its argument as it was.
func TestRunFindingsAdd(t *testing.T) {
	t.Parallel()
	var b RunFindings
	v := reflect.ValueOf(&b).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Int {
			f.SetInt(int64(i + 1))
		}
	}
	b.Slot = &SlotFindings{HolesSeen: 1, Seals: 2, SealedBy: map[string]int{"inv": 2}, FillMillis: []float64{5}}
	var a RunFindings
	a.Add(b)
	a.Add(b)
	got := reflect.ValueOf(a)
	for i := range got.NumField() {
		if f := got.Field(i); f.Kind() == reflect.Int && f.Int() != 2*int64(i+1) {
			t.Errorf("after adding %d twice, %s = %d", i+1, got.Type().Field(i).Name, f.Int())
		}
	}
	if s := a.Slot; s == nil || s.HolesSeen != 2 || s.Seals != 4 || s.SealedBy["inv"] != 4 || len(s.FillMillis) != 2 {
		t.Errorf("Add summed slot findings to %+v", s)
	}
	if b.Slot.HolesSeen != 1 || b.Slot.SealedBy["inv"] != 2 {
		t.Errorf("Add changed its argument's slot findings: %+v", *b.Slot)
	}
}

// fuzzInput turns bytes into a small run: a few events and ops over them.
// Every byte is used as drawn, so the fuzzer reaches odd shapes (cursors
// that go back, pages that repeat ids, ops of unknown actors).
func fuzzInput(scheme byte, data []byte) RunInput {
	draw := fuzzbytes.New(data)
	next := draw.Int
	in := RunInput{Scheme: eventlog.Schemes()[int(scheme)%len(eventlog.Schemes())]}
	nEvents := next() % 12
	for range nEvents {
		e := eventlog.Event{RunID: "run-1", ID: fmt.Sprintf("e%02d", next()%16), Seq: int64(next() % 16)}
		if ms := next(); ms%4 != 0 {
			e.CommittedAt = at(ms)
		}
		in.Final = append(in.Final, e)
	}
	actors := []string{"inv-1", "inv-2", "driver", "step-1"}
	pick := func() eventlog.Event {
		if len(in.Final) == 0 {
			return eventlog.Event{ID: "zz", Seq: 99}
		}
		return in.Final[next()%len(in.Final)]
	}
	for draw.Len() > 0 {
		switch kind := next() % 3; kind {
		case 0, 1:
			op := history.Op{Kind: history.OpList, Actor: actors[next()%len(actors)], Start: at(next())}
			if c := next(); c%3 != 0 {
				op.After = eventlog.After(pick())
			}
			var p eventlog.Page
			for range next() % 4 {
				p.Events = append(p.Events, pick())
			}
			p.More = next()%2 == 0
			if next()%8 != 0 {
				op.Read = history.Summarize(p)
			}
			in.Ops = append(in.Ops, op)
		case 2:
			op := history.Op{Kind: history.OpAppend, Actor: actors[next()%len(actors)]}
			e := pick()
			op.Wrote = []history.OpEvent{{ID: e.ID, CommittedAt: at(next())}}
			in.Ops = append(in.Ops, op)
		}
	}
	return in
}

func FuzzAnalyzeRun(f *testing.F) {
	f.Add(byte(0), []byte{})
	f.Add(byte(0), []byte{4, 1, 0, 1, 2, 0, 20, 3, 0, 2, 4, 0, 3, 0, 0, 10, 0, 2, 0, 2, 0, 1, 1, 0, 30, 1, 2, 3, 1, 1})
	f.Add(byte(1), []byte{3, 1, 1, 1, 2, 2, 2, 2, 2, 3, 1, 0, 5, 3, 2, 0, 1, 0, 0, 7})
	f.Add(byte(2), []byte{5, 9, 0, 0, 8, 3, 5, 7, 1, 9, 6, 5, 2, 1, 1, 0, 1, 200, 2, 3, 0, 1, 2, 1})
	f.Fuzz(func(t *testing.T, scheme byte, data []byte) {
		in := fuzzInput(scheme, data)
		an := AnalyzeRun(in)
		got, order := an.Findings, an.Order
		if order.InvertedPairs != got.Inversions || order.Displaced != got.Displaced {
			t.Fatalf("findings %+v disagree with their commit order %+v", got, order)
		}
		n := len(in.Final)
		if len(an.Commits) != n {
			t.Fatalf("%d commit events for a final log of %d", len(an.Commits), n)
		}
		lists := 0
		for _, op := range in.Ops {
			if op.Kind == history.OpList && op.Read != nil && strings.HasPrefix(op.Actor, "inv-") {
				lists++
			}
		}
		for name, v := range map[string]int{
			"reads": got.Reads, "non_prefix_reads": got.NonPrefixReads, "cursor_skips": got.CursorSkips,
			"inversions": got.Inversions, "displaced": got.Displaced, "gaps": got.Gaps,
			"duplicates": got.Duplicates, "unpositioned": got.Unpositioned, "duplicate_creates": got.DuplicateCreates,
		} {
			if v < 0 {
				t.Fatalf("%s = %d < 0 for %+v", name, v, in)
			}
		}
		switch {
		case got.Reads > lists:
			t.Fatalf("%d reads from %d invocation pages", got.Reads, lists)
		case got.NonPrefixReads > got.Reads:
			t.Fatalf("%d non-prefix reads of %d", got.NonPrefixReads, got.Reads)
		case got.Inversions > n*(n-1)/2, got.Displaced > n:
			t.Fatalf("%d inverted pairs, %d displaced among %d events", got.Inversions, got.Displaced, n)
		case got.CursorSkips > n*got.Reads:
			t.Fatalf("%d cursor skips in %d reads of %d events", got.CursorSkips, got.Reads, n)
		case got.Duplicates+got.Unpositioned > n:
			t.Fatalf("%d duplicates and %d unpositioned among %d events", got.Duplicates, got.Unpositioned, n)
		case got.DuplicateCreates > 0 && got.DuplicateCreates >= n:
			t.Fatalf("%d duplicate creations among %d events", got.DuplicateCreates, n)
		}
	})
}
