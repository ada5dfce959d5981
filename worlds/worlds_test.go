package worlds_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/local"
)

func TestParseProfile(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
		max     time.Duration // bound every draw must respect
	}{
		{"none", false, 0},
		{"fixed:5ms", false, 5 * time.Millisecond},
		{"seed", false, 2 * time.Second},
		{"fixed:", true, 0},
		{"fixed:-1s", true, 0},
		{"fixed:soon", true, 0},
		{"fast", true, 0},
		{"", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := worlds.ParseProfile(tt.in, 7)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseProfile(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "--latency") {
					t.Errorf("error %q does not name the flag", err)
				}
				return
			}
			if p.String() != tt.in {
				t.Errorf("String() = %q, want %q", p.String(), tt.in)
			}
			for _, typ := range eventlog.Types() {
				for range 200 {
					if d := p.Delay(typ); d < 0 || d > tt.max {
						t.Fatalf("Delay(%s) = %s, outside [0, %s]", typ, d, tt.max)
					}
				}
			}
			if p.MaxFactDelay() > tt.max {
				t.Errorf("MaxFactDelay = %s, above %s", p.MaxFactDelay(), tt.max)
			}
		})
	}
}

// TestProfileOrNone: a nil profile is --latency none (every window zero);
// any other profile is itself.
func TestProfileOrNone(t *testing.T) {
	fixed, err := worlds.ParseProfile("fixed:5ms", 1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		in        worlds.Profile
		wantName  string
		wantDelay time.Duration
	}{
		{"nil is none", nil, "none", 0},
		{"none stays none", worlds.NoLatency(), "none", 0},
		{"a profile is kept", fixed, "fixed:5ms", 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := worlds.ProfileOrNone(tt.in)
			if p == nil || p.String() != tt.wantName || p.Delay(eventlog.StepCreated) != tt.wantDelay || p.MaxFactDelay() != tt.wantDelay {
				t.Fatalf("ProfileOrNone(%v) = %v; want %s with windows of %s", tt.in, p, tt.wantName, tt.wantDelay)
			}
		})
	}
}

// TestSeedProfileShapesTheSeedsWindows: decisions wait far longer than
// hook_received, as the seed measured (p50 31 ms against 0.4 ms).
func TestSeedProfileShapesTheSeedsWindows(t *testing.T) {
	p, _ := worlds.ParseProfile("seed", 1)
	median := func(typ eventlog.Type) time.Duration {
		ds := make([]time.Duration, 501)
		for i := range ds {
			ds[i] = p.Delay(typ)
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	if d, h := median(eventlog.StepCreated), median(eventlog.HookReceived); d < 20*h {
		t.Fatalf("step_created median %s is not far above hook_received's %s", d, h)
	}
}

func TestRegistryNamesTheValidWorlds(t *testing.T) {
	var r worlds.Registry
	local.Register(&r)
	if _, err := r.Lookup("local"); err != nil {
		t.Fatal(err)
	}
	_, err := r.Lookup("mars")
	if err == nil || !strings.Contains(err.Error(), "local") {
		t.Fatalf("Lookup(mars) = %v, want an error listing local", err)
	}
}

type sink struct {
	mu  sync.Mutex
	ops []history.Op
}

func (s *sink) Record(op history.Op) {
	s.mu.Lock()
	s.ops = append(s.ops, op)
	s.mu.Unlock()
}

func TestRecorderRecordsEveryOperation(t *testing.T) {
	ctx := worlds.WithActor(context.Background(), "inv-1")
	w, err := local.Open(ctx, worlds.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	var s sink
	rec := worlds.Record(w, &s)
	if err := rec.CreateRun(ctx, eventlog.Run{ID: "r1", Scheme: eventlog.SchemeSeq}); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Append(ctx, "r1", []eventlog.Draft{{Type: eventlog.RunCreated}}); err != nil {
		t.Fatal(err)
	}
	_, ferr := rec.AppendFenced(ctx, "r1", 0, []eventlog.Draft{{Type: eventlog.StepCreated, CorrelationID: "s"}})
	if !errors.Is(ferr, eventlog.ErrFenced) {
		t.Fatalf("stale fenced append = %v, want fenced", ferr)
	}
	p, err := rec.List(ctx, "r1", eventlog.Cursor{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind, err string
	}{{history.OpCreateRun, ""}, {history.OpAppend, ""}, {history.OpAppendFenced, "fenced"}, {history.OpList, ""}}
	if len(s.ops) != len(want) {
		t.Fatalf("recorded %d ops, want %d", len(s.ops), len(want))
	}
	for i, w := range want {
		op := s.ops[i]
		if op.Kind != w.kind || op.Err != w.err || op.Actor != "inv-1" || op.End.Before(op.Start) {
			t.Errorf("op %d = %+v, want kind %s err %q by inv-1", i, op, w.kind, w.err)
		}
	}
	if got := s.ops[1].Wrote; len(got) != 1 || got[0].Seq != 1 || got[0].ID == "" {
		t.Errorf("append recorded %+v, want the assigned id and seq 1", got)
	}
	if fe := s.ops[2]; fe.Expected != 0 || fe.Actual != 1 {
		t.Errorf("fenced op expected %d actual %d, want 0 and 1", fe.Expected, fe.Actual)
	}
	if r := s.ops[3].Read; r == nil || r.N != 1 || r.SetHash != history.IDHash(p.Events[0].ID) || r.Last.Seq != 1 {
		t.Errorf("read summary %+v does not match the page", r)
	}
}

// FuzzParseProfile: a --latency value ParseProfile refuses gets an error
// naming the flag and the value as given; one it accepts is "none", "seed"
// or "fixed:DURATION", spells itself back (String is the flag spelling, and
// parses again to the same profile) and draws only windows in [0, its
// largest Max].
func FuzzParseProfile(f *testing.F) {
	for _, seed := range []string{
		"none", "seed", "fixed:5ms", "fixed:0s", "fixed:1h2m3.5s", "fixed:-0s",
		"fixed:", "fixed:-1s", "fixed:soon", "fixed:9999999999h", "fast", "", "Seed", " none", "fixed:5ms ",
	} {
		f.Add(seed, uint64(7))
	}
	f.Fuzz(func(t *testing.T, s string, seed uint64) {
		p, err := worlds.ParseProfile(s, seed)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "--latency") || !strings.Contains(msg, strconv.Quote(s)) {
				t.Fatalf("ParseProfile(%q): error %q does not name --latency and the value", s, msg)
			}
			return
		}
		if s != "none" && s != "seed" && !strings.HasPrefix(s, "fixed:") && !strings.HasPrefix(s, worlds.ProfileFilePrefix) {
			t.Fatalf("ParseProfile(%q) accepted a value that is none of seed, none, fixed:DURATION", s)
		}
		if p.String() != s {
			t.Fatalf("ParseProfile(%q).String() = %q, want the flag spelling", s, p.String())
		}
		again, err := worlds.ParseProfile(p.String(), seed)
		if err != nil || again.String() != p.String() || !slices.Equal(again.Windows(), p.Windows()) {
			t.Fatalf("ParseProfile(%q) = %s, which parses again to %v, %v", s, p, again, err)
		}
		var largest time.Duration
		for _, w := range p.Windows() {
			if w.Median < 0 || w.Max < w.Median || w.Sigma < 0 || w.Source == "" {
				t.Fatalf("ParseProfile(%q) has window %+v: want 0 <= median <= max, sigma >= 0, a source", s, w)
			}
			largest = max(largest, w.Max)
		}
		if d := p.MaxFactDelay(); d < 0 || d > largest {
			t.Fatalf("ParseProfile(%q).MaxFactDelay() = %s, outside [0, %s]", s, d, largest)
		}
		for _, typ := range eventlog.Types() {
			if d := p.Delay(typ); d < 0 || d > largest {
				t.Fatalf("ParseProfile(%q).Delay(%s) = %s, outside [0, %s]", s, typ, d, largest)
			}
		}
	})
}
