package eventlog

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestTypeClasses(t *testing.T) {
	t.Parallel()
	decisions := []Type{RunCreated, StepCreated, HookCreated, HookDisposed, WaitCreated, AttrSet, RunCompleted, RunFailed}
	for _, typ := range Types() {
		if got, want := typ.IsDecision(), slices.Contains(decisions, typ); got != want {
			t.Errorf("%s.IsDecision() = %v, want %v", typ, got, want)
		}
		if got, err := ParseType(string(typ)); err != nil || got != typ {
			t.Errorf("ParseType(%q) = %q, %v", typ, got, err)
		}
	}
	if _, err := ParseType("step_exploded"); err == nil {
		t.Error("ParseType accepted an unknown type")
	}
	for _, s := range Schemes() {
		if got, err := ParseScheme(string(s)); err != nil || got != s {
			t.Errorf("ParseScheme(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := ParseScheme("uuid"); err == nil {
		t.Error("ParseScheme accepted an unknown scheme")
	}
}

func seqs(ns ...int64) []Event {
	out := make([]Event, len(ns))
	for i, n := range ns {
		out[i] = Event{Seq: n}
	}
	return out
}

func TestCheckDensity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		after   int64
		events  []Event
		wantErr error
		want    int64 // GapError.Want or DuplicateError.Seq
	}{
		{"empty", 0, nil, nil, 0},
		{"dense from start", 0, seqs(1, 2, 3), nil, 0},
		{"dense after cursor", 5, seqs(6, 7), nil, 0},
		{"hole", 0, seqs(1, 2, 4), ErrGap, 3},
		{"starts late", 2, seqs(4), ErrGap, 3},
		{"repeat", 0, seqs(1, 2, 2, 3), ErrDuplicate, 2},
		{"goes back", 3, seqs(4, 2), ErrDuplicate, 2},
		{"unpositioned", 0, seqs(1, 0), ErrGap, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckDensity("r", tt.after, tt.events)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("CheckDensity = %v, want %v", err, tt.wantErr)
			}
			var ge *GapError
			var de *DuplicateError
			switch {
			case errors.As(err, &ge) && ge.Want != tt.want:
				t.Errorf("gap names seq %d, want %d", ge.Want, tt.want)
			case errors.As(err, &de) && de.Seq != tt.want:
				t.Errorf("duplicate names seq %d, want %d", de.Seq, tt.want)
			}
		})
	}
}

func TestPageAfter(t *testing.T) {
	t.Parallel()
	ulids := func(ids ...string) []Event {
		out := make([]Event, len(ids))
		for i, id := range ids {
			out[i] = Event{ID: id}
		}
		return out
	}
	tests := []struct {
		name     string
		after    Cursor
		events   []Event
		limit    int
		wantLen  int
		wantMore bool
		wantNext Cursor
	}{
		{"empty log", Cursor{}, nil, 10, 0, false, Cursor{}},
		{"nothing past the cursor keeps it", Cursor{Seq: 4}, nil, 10, 0, false, Cursor{Seq: 4}},
		{"fewer than the limit", Cursor{Seq: 2}, seqs(3, 4), 10, 2, false, Cursor{Seq: 4}},
		{"exactly the limit", Cursor{}, seqs(1, 2, 3), 3, 3, false, Cursor{Seq: 3}},
		{"one past the limit", Cursor{}, seqs(1, 2, 3, 4), 3, 3, true, Cursor{Seq: 3}},
		{"no limit", Cursor{Seq: 1}, seqs(2, 3, 4, 5), 0, 4, false, Cursor{Seq: 5}},
		{"negative limit", Cursor{}, seqs(1, 2), -1, 2, false, Cursor{Seq: 2}},
		{"ulid cursor", Cursor{ID: "a"}, ulids("b", "c", "d"), 2, 2, true, Cursor{ID: "c"}},
		{"ulid, nothing past the cursor", Cursor{ID: "d"}, nil, 2, 0, false, Cursor{ID: "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := PageAfter(tt.after, tt.events, tt.limit)
			if len(p.Events) != tt.wantLen || p.More != tt.wantMore || p.Next != tt.wantNext {
				t.Fatalf("PageAfter(%+v, %d events, %d) = %d events, More %v, Next %+v; want %d, %v, %+v",
					tt.after, len(tt.events), tt.limit, len(p.Events), p.More, p.Next, tt.wantLen, tt.wantMore, tt.wantNext)
			}
			if !slices.EqualFunc(p.Events, tt.events[:tt.wantLen], func(a, b Event) bool { return After(a) == After(b) }) {
				t.Errorf("page %+v is not the first %d of %+v", p.Events, tt.wantLen, tt.events)
			}
		})
	}
}

func TestDraftKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    Draft
		want []string
	}{
		{Draft{Type: StepCreated, CorrelationID: "s1"}, []string{"step_created/s1"}},
		{Draft{Type: HookReceived, CorrelationID: "h1", Dedup: "p7"}, []string{"hook_received/h1/p7"}},
		{Draft{Type: HookCreated, CorrelationID: "h1", Token: "tok"}, []string{"hook_created/h1", "hook_token/tok"}},
		{Draft{Type: RunCompleted}, []string{"run_completed/"}},
	}
	for _, tt := range tests {
		if got := tt.d.Keys(); !slices.Equal(got, tt.want) {
			t.Errorf("%+v.Keys() = %v, want %v", tt.d, got, tt.want)
		}
	}
}

func TestErrorsMatchTheirSentinels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err   error
		want  error
		class string
	}{
		{&FencedError{RunID: "r", Expected: 3, Actual: 5}, ErrFenced, "fenced"},
		{&GapError{RunID: "r", Want: 3, Got: 5}, ErrGap, "gap"},
		{&DuplicateError{RunID: "r", Seq: 3}, ErrDuplicate, "duplicate"},
		{&ConflictError{RunID: "r", Key: "k"}, ErrConflict, "conflict"},
		{Unavailable("list", errors.New("connection refused")), ErrUnavailable, "unavailable"},
		{ErrNoRun, ErrNoRun, "no_run"},
		{errors.New("boom"), nil, "other"},
	}
	for _, tt := range tests {
		if tt.want != nil && !errors.Is(tt.err, tt.want) {
			t.Errorf("%v does not match %v", tt.err, tt.want)
		}
		if got := Classify(tt.err); got != tt.class {
			t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.class)
		}
	}
	if Classify(nil) != "" {
		t.Error("Classify(nil) is not empty")
	}
}

func TestMintTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 7, 29, 1, 2, 3, 456_000_000, time.UTC)
	u := NewMinter("", rand.NewChaCha8([32]byte{2})).Mint(at)
	tests := []struct {
		id   string
		want time.Time // zero: MintTime fails
	}{
		{LocalPrefix + u, at},
		{ServerPrefix + u, at},
		{u, at},
		{"my_run_" + u, at},
		{"", time.Time{}},
		{"wevt_", time.Time{}},
		{"wevt_" + u[:25], time.Time{}},
		{"wevt_" + u + "_7", time.Time{}},
	}
	for _, tt := range tests {
		got, err := MintTime(tt.id)
		if tt.want.IsZero() {
			if err == nil || !got.IsZero() {
				t.Errorf("MintTime(%q) = %v, %v; want the zero time and an error", tt.id, got, err)
			}
			continue
		}
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("MintTime(%q) = %v, %v; want %v", tt.id, got, err, tt.want)
		}
	}
}

func TestMinterIsMonotonicWithinAMillisecond(t *testing.T) {
	t.Parallel()
	m := NewMinter(LocalPrefix, rand.NewChaCha8([32]byte{1}))
	at := time.Date(2026, 7, 29, 0, 0, 0, 0, time.UTC)
	prev := ""
	for range 1000 {
		id := m.Mint(at)
		if len(id) != len(LocalPrefix)+26 || id[:len(LocalPrefix)] != LocalPrefix {
			t.Fatalf("id %q is not %s + a ULID", id, LocalPrefix)
		}
		if id <= prev {
			t.Fatalf("id %q does not sort after %q", id, prev)
		}
		prev = id
	}
}
