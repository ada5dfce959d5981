package worldtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// testFields: every event type round-trips with all its fields, and events
// carry run id, prefixed id, position, MintedAt <= CommittedAt.
func testFields(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	if f.lifecycle() {
		testFieldsLifecycle(f)
		return
	}
	var written []eventlog.Event
	for _, typ := range eventlog.Types() {
		if why := s.limits.Types[typ]; why != "" {
			t.Logf("%s not written: %s", typ, why)
			continue
		}
		d := Draft(typ, "fields_"+string(typ))
		switch typ {
		case eventlog.RunCreated:
			d.CorrelationID, d.Payload = "", nil
		case eventlog.HookCreated:
			d.Token = "tok_fields"
		case eventlog.HookReceived:
			d.Dedup = "payload_7"
		}
		written = append(written, f.append(d)...)
	}
	f.checkSame("log", f.all(), written)
}

// testFieldsLifecycle is testFields for a store that validates each event
// against its entity: every type it can store, each after its entity's
// creation, the run's end last; run_failed ends a second run.
func testFieldsLifecycle(f *fixture) {
	tok := f.draft(eventlog.HookCreated, "fields_hook")
	tok.Token = "tok_fields"
	recv := f.draft(eventlog.HookReceived, "fields_hook")
	recv.Dedup = "payload_7"
	created := eventlog.Draft{Type: eventlog.RunCreated}
	first := []eventlog.Draft{created,
		f.draft(eventlog.StepCreated, "fields_step"), f.draft(eventlog.StepStarted, "fields_step"), f.draft(eventlog.StepCompleted, "fields_step"),
		f.draft(eventlog.StepCreated, "fields_fail"), f.draft(eventlog.StepStarted, "fields_fail"), f.draft(eventlog.StepFailed, "fields_fail"),
		tok, recv, f.draft(eventlog.HookDisposed, "fields_hook"),
		f.draft(eventlog.WaitCreated, "fields_wait"), f.draft(eventlog.WaitCompleted, "fields_wait"),
		f.draft(eventlog.RunCompleted, "")}
	second := []eventlog.Draft{created, {Type: eventlog.RunFailed, Payload: json.RawMessage(`{"code":"X"}`)}}
	covered := map[eventlog.Type]bool{}
	for _, d := range append(first, second...) {
		covered[d.Type] = true
	}
	for _, typ := range eventlog.Types() {
		if why := f.s.limits.Types[typ]; why != "" {
			f.t.Logf("%s not written: %s", typ, why)
		} else if !covered[typ] {
			f.t.Fatalf("testFieldsLifecycle writes no %s", typ)
		}
	}
	var written []eventlog.Event
	for _, d := range first {
		written = append(written, f.append(d)...)
	}
	f.checkSame("log", f.all(), written)
	f.run = f.createRun(eventlog.FenceOnLog)
	written = nil
	for _, d := range second {
		written = append(written, f.append(d)...)
	}
	f.checkSame("second run's log", f.all(), written)
}

// testOrdering: a single writer's events come back in scheme order, which is
// also append order, however they were batched.
func testOrdering(t testing.TB, s *suite) {
	tests := []struct {
		name   string
		fenced bool
		write  func(f *fixture, ds []eventlog.Draft) []eventlog.Event
	}{
		{"one_by_one", false, func(f *fixture, ds []eventlog.Draft) []eventlog.Event {
			var out []eventlog.Event
			for _, d := range ds {
				out = append(out, f.append(d)...)
			}
			return out
		}},
		{"one_batch", false, func(f *fixture, ds []eventlog.Draft) []eventlog.Event { return f.append(ds...) }},
		{"fenced_batches", true, func(f *fixture, ds []eventlog.Draft) []eventlog.Event {
			return append(f.appendFenced(0, ds[:4]...), f.appendFenced(4, ds[4:]...)...)
		}},
		{"mixed", true, func(f *fixture, ds []eventlog.Draft) []eventlog.Event {
			out := f.append(ds[:3]...)
			out = append(out, f.appendFenced(3, ds[3:6]...)...)
			for _, d := range ds[6:] {
				out = append(out, f.append(d)...)
			}
			return out
		}},
	}
	for _, tt := range tests {
		Run(t, tt.name, func(t testing.TB) {
			if tt.fenced {
				s.skipFence(t, tt.name)
			}
			f := s.fixture(t, eventlog.FenceOnLog)
			written := tt.write(f, f.mix("ord", 10))
			f.checkSame("log", f.all(), written)
		})
	}
}

// testPagination: small pages concatenate to one big read; Next follows the
// last event of a page (or stays put on an empty one); the page after the
// last event is empty and final.
func testPagination(t testing.TB, s *suite) {
	for _, limit := range []int{1, 2, 3, 10} {
		Run(t, fmt.Sprintf("limit=%d", limit), func(t testing.TB) {
			f := s.fixture(t, eventlog.FenceOnLog)
			f.append(f.mix("page", 10)...)
			want := f.all()
			got := f.pages(eventlog.Cursor{}, limit)
			f.checkSame("pages", got, want)
			p := f.list(eventlog.After(want[len(want)-1]), limit)
			if len(p.Events) != 0 || p.More {
				t.Fatalf("page after the last event: %d events, More=%v; want none and More=false", len(p.Events), p.More)
			}
		})
	}
}

// pages reads from after to the end in pages of limit, checking the cursor
// each page returns.
func (f *fixture) pages(after eventlog.Cursor, limit int) []eventlog.Event {
	f.t.Helper()
	var out []eventlog.Event
	for range 1000 {
		p := f.list(after, limit)
		want := after
		if n := len(p.Events); n > 0 {
			want = eventlog.After(p.Events[n-1])
		}
		if !f.s.sameCursor(p.Next, want) {
			f.t.Fatalf("List(after %+v, limit %d): Next %+v, want %+v", after, limit, p.Next, want)
		}
		out = append(out, p.Events...)
		if !p.More {
			return out
		}
		if len(p.Events) == 0 {
			f.t.Fatalf("List(after %+v, limit %d): empty page with More set", after, limit)
		}
		after = p.Next
	}
	f.t.Fatalf("reading from %+v in pages of %d did not end", after, limit)
	return nil
}

// sameCursor compares cursors on the field the scheme uses.
func (s *suite) sameCursor(a, b eventlog.Cursor) bool {
	if s.positioned {
		return a.Seq == b.Seq
	}
	return a.ID == b.ID
}

// testCursorResume: a reader that stopped mid-log, or at its end, resumes
// from its cursor after more appends. Under seq it gets exactly the events it
// has not seen; under ulid (with this single writer) what a full read shows
// past the cursor.
func testCursorResume(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	first := f.append(f.mix("old", 10)...)
	half := f.list(eventlog.Cursor{}, 5)
	f.checkSame("first half", half.Events, first[:5])
	if !half.More {
		t.Fatalf("first half of 10 events: More=false")
	}
	more := f.append(f.mix("new", 3)...)
	more = append(more, f.appendMaybeFenced(13, f.mix("newf", 2)...)...)
	rest := f.pages(half.Next, 4)
	f.checkResume(half.Next, rest, slices.Concat(first[5:], more))

	end := eventlog.After(rest[len(rest)-1])
	last := f.append(f.mix("last", 2)...)
	f.checkResume(end, f.pages(end, 4), last)
}

func (f *fixture) checkResume(after eventlog.Cursor, got, unseen []eventlog.Event) {
	f.t.Helper()
	if f.s.positioned {
		f.checkSame(fmt.Sprintf("resumed after seq %d", after.Seq), got, unseen)
		return
	}
	var tail []eventlog.Event
	for _, e := range f.all() {
		if e.ID > after.ID {
			tail = append(tail, e)
		}
	}
	f.checkSame("resumed after "+after.ID, got, tail)
}

// testDensity: reading from every cursor with several limits returns exactly
// the slice of the full log past it (dense, under positioned schemes); More
// is set whenever events remain.
func testDensity(t testing.TB, s *suite) {
	f := s.fixture(t, eventlog.FenceOnLog)
	f.append(f.mix("a", 4)...)
	f.appendMaybeFenced(4, f.mix("b", 3)...)
	f.append(f.mix("c", 1)...)
	f.append(f.mix("d", 4)...)
	all := f.all()
	n := len(all)
	for k := 0; k <= n; k++ {
		after := eventlog.Cursor{}
		if k > 0 {
			after = eventlog.After(all[k-1])
		}
		for _, limit := range []int{1, 3, n + 1} {
			p := f.list(after, limit)
			f.checkSame(fmt.Sprintf("page after %d events, limit %d", k, limit), p.Events, all[k:min(k+limit, n)])
			if k+len(p.Events) < n && !p.More {
				t.Fatalf("page after %d events, limit %d: More=false with %d events left", k, limit, n-k-len(p.Events))
			}
			if len(p.Events) == 0 && p.More {
				t.Fatalf("empty page after %d events: More=true", k)
			}
		}
	}
}
