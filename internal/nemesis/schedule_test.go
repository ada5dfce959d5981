package nemesis

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	cfg := Config{Kinds: KindList(Kinds), Faults: 3, Window: 2 * time.Second, Gap: 5 * time.Second}
	available := map[string][]Kind{
		"postgres": {PGRestart, PGTerminate, Latency},
		"vercel":   {Ingest503, DynamoPause, RedisDown, Latency},
		"local":    {FSUnavailable},
	}
	got := Schedule(cfg, 7, available)
	if again := Schedule(cfg, 7, available); !reflect.DeepEqual(got, again) {
		t.Fatal("the same config, seed and targets gave two schedules")
	}
	if other := Schedule(cfg, 8, available); reflect.DeepEqual(got, other) {
		t.Fatal("seeds 7 and 8 gave the same schedule")
	}
	count := map[string]map[Kind]int{}
	last := map[string]time.Duration{} // planned end of each world's previous fault
	for i, f := range got {
		if f.ID != i+1 {
			t.Errorf("fault %d has id %d", i, f.ID)
		}
		if i > 0 && f.At < got[i-1].At {
			t.Errorf("fault %d starts at %s, before fault %d at %s", f.ID, f.At, got[i-1].ID, got[i-1].At)
		}
		if count[f.World] == nil {
			count[f.World] = map[Kind]int{}
		}
		count[f.World][f.Kind]++
		if gap := f.At - last[f.World]; gap < cfg.Gap/2 || gap > cfg.Gap*3/2 {
			t.Errorf("fault %d (%s) follows its world's previous one after %s, want [%s, %s]", f.ID, f.World, gap, cfg.Gap/2, cfg.Gap*3/2)
		}
		last[f.World] = f.At + f.For
		switch {
		case f.Kind.Instant() && f.For != 0:
			t.Errorf("fault %d (%s) lasts %s, want an instant", f.ID, f.Kind, f.For)
		case !f.Kind.Instant() && (f.For < cfg.Window/2 || f.For > cfg.Window):
			t.Errorf("fault %d (%s) lasts %s, want [%s, %s]", f.ID, f.Kind, f.For, cfg.Window/2, cfg.Window)
		case f.Kind == Latency && (f.Delay < MinDelay || f.Delay > MaxDelay):
			t.Errorf("latency fault %d adds %s, want [%s, %s]", f.ID, f.Delay, MinDelay, MaxDelay)
		case f.Kind != Latency && f.Delay != 0:
			t.Errorf("fault %d (%s) has a delay", f.ID, f.Kind)
		}
	}
	for world, kinds := range available {
		for _, k := range kinds {
			if count[world][k] != cfg.Faults {
				t.Errorf("%s gets %d %s faults, want %d", world, count[world][k], k, cfg.Faults)
			}
		}
		if len(count[world]) != len(kinds) {
			t.Errorf("%s gets kinds %v, want only %v", world, count[world], kinds)
		}
	}
}

// TestScheduleOnlyConfiguredKinds: a world gets the configured kinds it has
// targets for, and no others.
func TestScheduleOnlyConfiguredKinds(t *testing.T) {
	cfg := Config{Kinds: KindList{Latency, FSUnavailable}, Faults: 2}
	got := Schedule(cfg, 1, map[string][]Kind{"postgres": {PGRestart, Latency}, "vercel": {Ingest503}})
	if len(got) != 2 {
		t.Fatalf("got %d faults, want 2 latency faults on postgres: %+v", len(got), got)
	}
	for _, f := range got {
		if f.Kind != Latency || f.World != "postgres" {
			t.Errorf("unexpected fault %+v", f)
		}
	}
	if got := Schedule(Config{}, 1, map[string][]Kind{"local": {FSUnavailable}}); got != nil {
		t.Errorf("the zero Config (off) scheduled %+v", got)
	}
}

func TestParseKinds(t *testing.T) {
	tests := []struct {
		in      string
		want    []Kind
		wantErr bool
	}{
		{"", nil, false},
		{"none", nil, false},
		{"all", Kinds, false},
		{"pg-restart,latency", []Kind{PGRestart, Latency}, false},
		{" latency , ", []Kind{Latency}, false},
		{"pg-restart,pg-restart", nil, true},
		{"reboot", nil, true},
		{",", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseKinds(tt.in)
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	on := Config{Kinds: KindList{Latency}}.Defaults()
	// The worlds say which kinds they offer (worlds.Entry.Faults); these
	// are made up.
	offers := map[string][]Kind{"db": {PGTerminate, Latency}, "cache": {RedisDown, Latency}, "disk": {FSUnavailable}}
	tests := []struct {
		name   string
		cfg    Config
		worlds []string
		// wantErr is the error wanted ("" none).
		wantErr string
	}{
		{"off", Config{}, []string{"disk"}, ""},
		{"defaults", on, []string{"db"}, ""},
		{"no faults", Config{Kinds: on.Kinds, Faults: 0, Window: time.Second}, []string{"db"}, "--nemesis-faults must be in [1, 50], got 0"},
		{"too many faults", Config{Kinds: on.Kinds, Faults: MaxFaults + 1, Window: time.Second}, []string{"db"}, "--nemesis-faults must be in [1, 50], got 51"},
		{"window too short", Config{Kinds: on.Kinds, Faults: 1, Window: time.Millisecond}, []string{"db"}, "--nemesis-window must be in [100ms, 1m0s], got 1ms"},
		{"window too long", Config{Kinds: on.Kinds, Faults: 1, Window: time.Hour}, []string{"db"}, "--nemesis-window must be in [100ms, 1m0s], got 1h0m0s"},
		{"negative gap", Config{Kinds: on.Kinds, Faults: 1, Window: time.Second, Gap: -1}, []string{"db"}, "--nemesis-gap must be in [0, 10m0s], got -1ns"},
		{"kind without its world", on, []string{"disk"}, "--nemesis latency acts on world cache or db, and this storm has none (--world disk)"},
		{"a kind no world offers", Config{Kinds: KindList{Ingest503}}.Defaults(), []string{"db", "disk"}, "--nemesis ingest-503: no world offers it"},
		{"a world nobody knows", on, []string{"elsewhere"}, "--nemesis latency acts on world cache or db, and this storm has none (--world elsewhere)"},
		{"all on one world", Config{Kinds: KindList(Kinds)}.Defaults(), []string{"disk"}, ""},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate(tt.worlds, offers)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.wantErr {
			t.Errorf("%s: Validate = %q, want %q", tt.name, got, tt.wantErr)
		}
	}
}

// TestWorldsOf: a kind's worlds are those that offer it, in name order.
func TestWorldsOf(t *testing.T) {
	offers := map[string][]Kind{"vercel": {Ingest503, Latency}, "postgres": {PGRestart, Latency}, "local": {FSUnavailable}, "none": nil}
	tests := []struct {
		kind Kind
		want []string
	}{
		{Latency, []string{"postgres", "vercel"}},
		{FSUnavailable, []string{"local"}},
		{RedisDown, nil},
	}
	for _, tt := range tests {
		if got := WorldsOf(tt.kind, offers); !slices.Equal(got, tt.want) {
			t.Errorf("WorldsOf(%s) = %v, want %v", tt.kind, got, tt.want)
		}
	}
}

// TestNamed: a kind is named when the user listed it, not through "all".
func TestNamed(t *testing.T) {
	tests := []struct {
		kinds KindList
		kind  Kind
		want  bool
	}{
		{KindList{PGRestart, Latency}, PGRestart, true},
		{KindList{Latency}, PGRestart, false},
		{KindList(Kinds), PGRestart, false},
		{nil, PGRestart, false},
	}
	for _, tt := range tests {
		if got := (Config{Kinds: tt.kinds}).Named(tt.kind); got != tt.want {
			t.Errorf("Config{Kinds: %v}.Named(%s) = %v, want %v", tt.kinds, tt.kind, got, tt.want)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		endpoint string
		ok       bool
	}{
		{"127.0.0.1:5432", true},
		{"localhost:5432", true},
		{"[::1]:8000", true},
		{"http://127.0.0.1:8000", true},
		{"postgres://u:secret@127.0.0.2:5432/db", true},
		{"10.0.0.5:5432", false},
		{"db.example.com:5432", false},
		{"https://dynamodb.us-east-1.amazonaws.com", false},
		{"redis://u:secret@cache.internal:6379/0", false},
	}
	for _, tt := range tests {
		err := CheckLoopback("endpoint", tt.endpoint)
		if (err == nil) != tt.ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok %v", tt.endpoint, err, tt.ok)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckLoopback(%q) prints the password: %v", tt.endpoint, err)
		}
	}
}

// FuzzParseKinds: a --nemesis value ParseKinds refuses gets an error quoting
// the offending part of the value; one it accepts is off (nil) only for "",
// "none" or "off", and otherwise lists known kinds, each once, which the
// flag's String spells back to the same kinds (in the same order, but for
// "all", which is every kind in Kinds' order).
func FuzzParseKinds(f *testing.F) {
	for _, seed := range []string{
		"", "none", "off", "all", "pg-restart,latency", " latency , ", "pg-restart,pg-restart", "reboot", ",",
		"all,latency", "none,latency", "latency,,fs-unavailable", "Latency", "pg-restart\t,\nredis-down",
		"fs-unavailable,latency,redis-down,dynamo-pause,ingest-503,pg-terminate,pg-restart",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ks, err := ParseKinds(s)
		if err != nil {
			msg := err.Error()
			i := strings.IndexByte(msg, '"')
			quoted, qerr := strconv.QuotedPrefix(msg[max(i, 0):])
			part, uerr := strconv.Unquote(quoted)
			if i < 0 || qerr != nil || uerr != nil || !strings.Contains(s, part) {
				t.Fatalf("ParseKinds(%q): error %q does not quote a part of the value", s, msg)
			}
			return
		}
		switch strings.TrimSpace(s) {
		case "", "none", "off":
			if ks != nil {
				t.Fatalf("ParseKinds(%q) = %v, want off", s, ks)
			}
			return
		}
		if len(ks) == 0 {
			t.Fatalf("ParseKinds(%q) accepted no kind as a nemesis that is on", s)
		}
		for i, k := range ks {
			if !slices.Contains(Kinds, k) || slices.Contains(ks[:i], k) {
				t.Fatalf("ParseKinds(%q) = %v: %q is unknown or given twice", s, ks, k)
			}
		}
		list := KindList(ks)
		var back KindList
		if err := back.Set(list.String()); err != nil {
			t.Fatalf("ParseKinds(%q) = %v, whose String %q does not parse: %v", s, ks, list.String(), err)
		}
		want := ks
		if list.All() {
			want = Kinds
		}
		if !slices.Equal(back, want) {
			t.Fatalf("ParseKinds(%q) = %v, whose String %q parses to %v", s, ks, list.String(), back)
		}
	})
}
