package worldtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// fixture is one fresh world with one run of the scheme under test.
type fixture struct {
	t   testing.TB
	s   *suite
	w   worlds.World
	ctx context.Context
	run string
}

// fixture opens a fresh world and creates a run with the given fence basis.
func (s *suite) fixture(t testing.TB, basis eventlog.FenceBasis) *fixture {
	t.Helper()
	f := &fixture{t: t, s: s, w: s.open(t), ctx: t.Context()}
	f.run = f.createRun(basis)
	return f
}

// createRun creates another run of the scheme under test.
func (f *fixture) createRun(basis eventlog.FenceBasis) string {
	f.t.Helper()
	return NewRun(f.t, f.w, eventlog.Run{Scheme: f.s.scheme, FenceBasis: basis})
}

// append writes drafts unfenced and checks what came back.
func (f *fixture) append(d ...eventlog.Draft) []eventlog.Event {
	f.t.Helper()
	evs, err := f.w.Append(f.ctx, f.run, d)
	if err != nil {
		f.t.Fatalf("Append(%d drafts): %v", len(d), err)
	}
	f.checkWritten(d, evs)
	return evs
}

// appendFenced writes a fenced batch that must be accepted.
func (f *fixture) appendFenced(expected int64, d ...eventlog.Draft) []eventlog.Event {
	f.t.Helper()
	evs, err := f.w.AppendFenced(f.ctx, f.run, expected, d)
	if err != nil {
		f.t.Fatalf("AppendFenced(expected %d, %d drafts): %v", expected, len(d), err)
	}
	f.checkWritten(d, evs)
	return evs
}

// list reads one page and checks every event on it.
func (f *fixture) list(after eventlog.Cursor, limit int) eventlog.Page {
	f.t.Helper()
	p, err := f.w.List(f.ctx, f.run, after, limit)
	if err != nil {
		f.t.Fatalf("List(after %+v, limit %d): %v", after, limit, err)
	}
	if len(p.Events) > limit {
		f.t.Fatalf("List(after %+v, limit %d) returned %d events", after, limit, len(p.Events))
	}
	for _, e := range p.Events {
		f.checkEvent(e)
	}
	if f.s.positioned {
		check := eventlog.CheckDensity
		if f.s.slots {
			check = eventlog.CheckSlots
		}
		if err := check(f.run, after.Seq, p.Events); err != nil {
			f.t.Fatalf("List(after seq %d, limit %d) is not dense: %v", after.Seq, limit, err)
		}
	}
	return p
}

// all reads the whole log in big pages and checks it is in scheme order.
func (f *fixture) all() []eventlog.Event {
	f.t.Helper()
	var out []eventlog.Event
	after := eventlog.Cursor{}
	for range 1000 {
		p := f.list(after, 1000)
		out = append(out, p.Events...)
		if !p.More {
			f.checkOrder(out)
			return out
		}
		if len(p.Events) == 0 {
			f.t.Fatalf("List(after %+v) returned an empty page with More set", after)
		}
		after = p.Next
	}
	f.t.Fatalf("the log did not end after 1000 pages")
	return nil
}

// checkOrder asserts a whole log is in scheme order: by seq dense from 1, or
// by strictly increasing id.
func (f *fixture) checkOrder(evs []eventlog.Event) {
	f.t.Helper()
	for i, e := range evs {
		if f.s.positioned && e.Seq != int64(i+1) {
			f.t.Fatalf("event %d (%s) has seq %d, want %d", i, e.ID, e.Seq, i+1)
		}
		if !f.s.positioned && i > 0 && evs[i-1].ID >= e.ID {
			f.t.Fatalf("event %d: id %s does not sort after %s", i, e.ID, evs[i-1].ID)
		}
	}
}

// checkEvent asserts the fields a world must set on every event.
func (f *fixture) checkEvent(e eventlog.Event) {
	f.t.Helper()
	if e.RunID != f.run {
		f.t.Fatalf("event %s: RunID %q, want %q", e.ID, e.RunID, f.run)
	}
	if f.s.slots {
		if pos, ok := eventlog.SlotPosition(e.ID); !ok || pos != e.Seq {
			f.t.Fatalf("event %s (seq %d): want the slot id %s", e.ID, e.Seq, eventlog.SlotID(e.Seq))
		}
	} else {
		checkID(f.t, e.ID)
	}
	switch {
	case f.s.positioned && e.Seq < 1:
		f.t.Fatalf("event %s: seq %d, want a position >= 1 under %s", e.ID, e.Seq, f.s.scheme)
	case !f.s.positioned && e.Seq != 0:
		f.t.Fatalf("event %s: seq %d, want 0 under %s", e.ID, e.Seq, f.s.scheme)
	}
	if e.MintedAt.IsZero() || e.CommittedAt.IsZero() {
		f.t.Fatalf("event %s: MintedAt %v, CommittedAt %v: both must be set", e.ID, e.MintedAt, e.CommittedAt)
	}
	if e.CommittedAt.Before(e.MintedAt) {
		f.t.Fatalf("event %s: CommittedAt %v is before MintedAt %v", e.ID, e.CommittedAt, e.MintedAt)
	}
}

// checkID asserts an id is a world prefix and a ULID.
func checkID(t testing.TB, id string) {
	t.Helper()
	rest, ok := strings.CutPrefix(id, eventlog.LocalPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(id, eventlog.ServerPrefix)
	}
	if !ok {
		t.Fatalf("event id %q: want prefix %q or %q", id, eventlog.LocalPrefix, eventlog.ServerPrefix)
	}
	if _, err := ulid.ParseStrict(rest); err != nil {
		t.Fatalf("event id %q: not a prefixed ULID: %v", id, err)
	}
}

// checkWritten asserts an append returned one event per draft, carrying the
// draft, in order, at consecutive positions under positioned schemes.
func (f *fixture) checkWritten(d []eventlog.Draft, evs []eventlog.Event) {
	f.t.Helper()
	if len(evs) != len(d) {
		f.t.Fatalf("append of %d drafts returned %d events", len(d), len(evs))
	}
	for i, e := range evs {
		f.checkEvent(e)
		if !sameDraft(e.Draft(), d[i]) {
			f.t.Fatalf("event %d: carries draft %s, want %s", i, draftText(e.Draft()), draftText(d[i]))
		}
		if f.s.positioned && i > 0 && e.Seq != evs[i-1].Seq+1 {
			f.t.Fatalf("batch event %d: seq %d after %d, want consecutive", i, e.Seq, evs[i-1].Seq)
		}
	}
}

// checkSame asserts two logs hold the same events in the same order.
func (f *fixture) checkSame(what string, got, want []eventlog.Event) {
	f.t.Helper()
	if len(got) != len(want) {
		f.t.Fatalf("%s: %d events, want %d\ngot:  %s\nwant: %s", what, len(got), len(want), ids(got), ids(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Seq != w.Seq || !sameDraft(g.Draft(), w.Draft()) || !g.MintedAt.Equal(w.MintedAt) {
			f.t.Fatalf("%s: event %d is %+v, want %+v", what, i, g, w)
		}
	}
}

// sameDraft compares drafts, payloads as compact JSON.
func sameDraft(a, b eventlog.Draft) bool {
	pa, pb := compact(a.Payload), compact(b.Payload)
	a.Payload, b.Payload = nil, nil
	return a.Type == b.Type && a.CorrelationID == b.CorrelationID && a.Token == b.Token &&
		a.Dedup == b.Dedup && bytes.Equal(pa, pb)
}

func compact(p json.RawMessage) []byte {
	if len(p) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, p); err != nil {
		return p
	}
	return b.Bytes()
}

// ids renders events as "id@seq" for failure messages.
func ids(evs []eventlog.Event) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = fmt.Sprintf("%s@%d", e.ID, e.Seq)
	}
	return strings.Join(s, " ")
}

// draftText is a draft for a failure's message, its payload as text.
func draftText(d eventlog.Draft) string {
	return fmt.Sprintf("{%s correlation %q token %q dedup %q payload %s}", d.Type, d.CorrelationID, d.Token, d.Dedup, orNone(string(d.Payload)))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
