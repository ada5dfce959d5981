package conditions_test

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/engine/conditions"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// presetKnobs returns the knobs of the named preset, failing the test if
// there is no such preset.
func presetKnobs(t testing.TB, name string) engine.Knobs {
	t.Helper()
	for _, p := range conditions.Presets() {
		if p.Name == name {
			return p.Knobs
		}
	}
	t.Fatalf("no preset %q", name)
	return engine.Knobs{}
}

func TestPresetsAreUniqueAndValid(t *testing.T) {
	t.Parallel()
	// The contract names these presets; more may follow.
	required := []string{"main", "tail-fence", "callsite", "seq", "seq+callsite", "seq+callsite+ordered", "sequence", "repost"}
	seen := map[string]bool{}
	for _, p := range conditions.Presets() {
		if seen[p.Name] {
			t.Errorf("preset %q listed twice", p.Name)
		}
		seen[p.Name] = true
		if strings.ContainsAny(p.Name, "/=, ") {
			t.Errorf("preset %q: a name must not contain '/', '=', ',' or spaces", p.Name)
		}
		if p.About == "" {
			t.Errorf("preset %q has no About", p.Name)
		}
		if err := p.Knobs.Policy.Validate(); err != nil {
			t.Errorf("preset %q: %v", p.Name, err)
		}
		if _, err := eventlog.ParseScheme(string(p.Knobs.Scheme)); err != nil {
			t.Errorf("preset %q: %v", p.Name, err)
		}
	}
	for _, name := range required {
		if !seen[name] {
			t.Errorf("required preset %q is missing", name)
		}
	}
}

func TestParseConditionPresetsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range conditions.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			c, err := conditions.Parse(p.Name)
			if err != nil {
				t.Fatalf("ParseCondition(%q): %v", p.Name, err)
			}
			if c.Name != p.Name {
				t.Errorf("Name = %q, want %q", c.Name, p.Name)
			}
			if c.Knobs != p.Knobs {
				t.Errorf("Knobs = %+v, want the preset's %+v", c.Knobs, p.Knobs)
			}
		})
	}
}

func TestParseConditionOverrides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		item     string
		preset   string
		wantName string // "" means the item itself
		edit     func(k *engine.Knobs)
	}{
		{item: "main/ids=callsite", preset: "main", edit: func(k *engine.Knobs) { k.IDs = engine.IDsCallsite }},
		{item: "seq/fence=decisions-only", preset: "seq", edit: func(k *engine.Knobs) { k.Fence = engine.FenceDecisionsOnly }},
		{item: "seq/fence=all", preset: "seq", edit: func(k *engine.Knobs) { k.Fence = engine.FenceAll }},
		{item: "main/fence=none", preset: "main", edit: func(*engine.Knobs) {}},
		{item: "seq/on-reject=repost", preset: "seq", edit: func(k *engine.Knobs) { k.OnReject = engine.RejectRepost }},
		{item: "repost/on-reject=rederive", preset: "repost", edit: func(k *engine.Knobs) { k.OnReject = engine.RejectRederive }},
		{item: "main/guard=count-index", preset: "main", edit: func(k *engine.Knobs) { k.Guard = "count-index" }},
		{item: "seq/admission=single-runner", preset: "seq", edit: func(k *engine.Knobs) { k.Admission = engine.AdmitSingleRunner }},
		{item: "main/scheme=seq", preset: "main", edit: func(k *engine.Knobs) { k.Scheme = eventlog.SchemeSeq }},
		{item: "seq/wake=ordered", preset: "seq", edit: func(k *engine.Knobs) { k.Wake = engine.WakeOrdered }},
		{item: "seq/wake=ordered/ids=callsite", preset: "seq", edit: func(k *engine.Knobs) {
			k.Wake, k.IDs = engine.WakeOrdered, engine.IDsCallsite
		}},
		{item: "seq/wake=ordered/wake=racy", preset: "seq", edit: func(k *engine.Knobs) { k.Wake = engine.WakeShuffle }},
		{item: "main/wake=shuffle", preset: "main", edit: func(k *engine.Knobs) { k.Wake = engine.WakeShuffle }},
		{item: "main/wake=ordered", preset: "main", edit: func(k *engine.Knobs) { k.Wake = engine.WakeOrdered }},
		{item: "main/writes=parallel", preset: "main", edit: func(k *engine.Knobs) { k.Writes = engine.WritesParallel }},
		{item: "callsite/writes=parallel", preset: "callsite", edit: func(k *engine.Knobs) { k.Writes = engine.WritesParallel }},
		{item: "main/writes=serial", preset: "main", edit: func(*engine.Knobs) {}}, // serial is the zero value: main itself
		{item: "main/writes=parallel/writes=serial", preset: "main", edit: func(*engine.Knobs) {}},
		{item: "slot/writes=parallel", preset: "slot", edit: func(k *engine.Knobs) { k.Writes = engine.WritesParallel }},
		{item: "main/page=20", preset: "main", edit: func(k *engine.Knobs) { k.Page = 20 }},
		{item: "main/page=0", preset: "main", edit: func(*engine.Knobs) {}}, // 0 is the storm's page size: main itself
		{item: "main/writes=parallel/page=20", preset: "main", edit: func(k *engine.Knobs) { k.Writes, k.Page = engine.WritesParallel, 20 }},
		{item: "seq/page=7", preset: "seq", edit: func(k *engine.Knobs) { k.Page = 7 }},
		{item: "main/hook-claim=force", preset: "main", edit: func(k *engine.Knobs) { k.HookClaim = engine.HookClaimForce }},
		{item: "main/hook-claim=refuse", preset: "main", edit: func(*engine.Knobs) {}}, // refuse is the zero value: main itself
		{item: "  seq/wake=ordered\t", preset: "seq", wantName: "seq/wake=ordered", edit: func(k *engine.Knobs) { k.Wake = engine.WakeOrdered }},
	}
	for _, tc := range tests {
		t.Run(tc.item, func(t *testing.T) {
			t.Parallel()
			want := presetKnobs(t, tc.preset)
			tc.edit(&want)
			wantName := tc.wantName
			if wantName == "" {
				wantName = tc.item
			}
			c, err := conditions.Parse(tc.item)
			if err != nil {
				t.Fatalf("ParseCondition(%q): %v", tc.item, err)
			}
			if c.Name != wantName {
				t.Errorf("Name = %q, want %q", c.Name, wantName)
			}
			if c.Knobs != want {
				t.Errorf("Knobs = %+v, want %+v", c.Knobs, want)
			}
		})
	}
}

func TestParseConditionErrors(t *testing.T) {
	t.Parallel()
	var presets []string
	for _, p := range conditions.Presets() {
		presets = append(presets, p.Name)
	}
	keys := []string{"scheme", "fence", "on-reject", "ids", "wake", "admission", "guard", "writes"}
	tests := []struct {
		item string
		want []string // the message must contain each
	}{
		{"nope", append([]string{`"nope"`}, presets...)},
		{"", presets},
		{"Main", []string{`"Main"`, "main"}},
		{"seq /wake=ordered", []string{`"seq "`}},
		{"nope/wake=ordered", []string{`"nope"`, "seq+callsite+ordered"}},
		{"seq/bogus=1", append([]string{`"bogus=1"`}, keys...)},
		{"seq/wake", append([]string{`"wake"`}, keys...)},
		{"seq/", append([]string{`""`}, keys...)},
		{"seq/wake=sideways", []string{"wake", `"sideways"`, "racy", "ordered"}},
		{"seq/wake=", []string{"wake", "racy", "ordered"}},
		{"slot/seal=", []string{`unknown seal ""`, "none", "noop"}}, // an unset Seal reads as none: once accepted
		{"seq/fence=maybe", []string{"fence", `"maybe"`, "none", "decisions", "decisions-only", "all"}},
		{"seq/on-reject=ignore", []string{"on-reject", `"ignore"`, "rederive", "repost"}},
		{"seq/ids=random", []string{"ids", `"random"`, "positional", "callsite"}},
		{"seq/admission=all", []string{"admission", `"all"`, "none", "single-runner"}},
		{"main/guard=lock", []string{"guard", `"lock"`, "none", "count-index"}},
		{"main/scheme=uuid", []string{"scheme", `"uuid"`, "ulid", "seq", "sequence"}},
		{"seq/wake=ordered/ids=random", []string{"ids", `"random"`}},
		{"main/writes=concurrent", []string{"writes", `"concurrent"`, "serial", "parallel"}},
		{"main/writes=", []string{`unknown writes ""`, "serial", "parallel"}},
		{"seq/writes=parallel", []string{"writes=parallel", "fence=none", "fence=decisions"}},
		{"tail-fence/writes=parallel", []string{"writes=parallel", "fence=all"}},
		{"main/guard=count-index/writes=parallel", []string{"writes=parallel", "guard=count-index"}},
		{"main/page=-1", []string{"page", `"-1"`, ">= 0"}},
		{"main/page=", []string{"page", `""`, ">= 0"}},
		{"main/page=twenty", []string{"page", `"twenty"`}},
		{"seq/fence=in-band", []string{"fence=in-band", "scheme=slot", "seq"}},
		{"main/on-reject=redeliver", []string{"on-reject=redeliver", "fenced", "fence=none"}},
		{"single-orchestrator/repeats=maybe", []string{"repeats", `"maybe"`, "strict", "inert"}},
		{"single-orchestrator/repeats=", []string{`unknown repeats ""`, "strict", "inert"}},
	}
	for _, tc := range tests {
		t.Run(tc.item, func(t *testing.T) {
			t.Parallel()
			c, err := conditions.Parse(tc.item)
			if err == nil {
				t.Fatalf("ParseCondition(%q) = %+v, want an error", tc.item, c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// FuzzParseCondition: a --condition item ParseCondition refuses gets an
// error quoting the item (or its unknown preset); one it accepts keeps the
// item as its name, holds valid knobs of a known preset, and its knobs spell
// back, as the preset and one override (in the knob's own spelling) per knob
// that differs from the preset's, to a condition with the same knobs.
func FuzzParseCondition(f *testing.F) {
	for _, p := range conditions.Presets() {
		f.Add(p.Name)
	}
	for _, seed := range []string{
		"slot/seal=", // found by this target: accepted, an unset Seal reading as none
		"slot/seal=noop/seal-after=1500ms",
		"slot+noop/seal-after=90m0.5s/seal=none",
		"main/wake=racy",
		"main/guard=none/guard=count-index",
		"main/writes=parallel",
		"seq/writes=parallel",
		"main/writes=serial",
		"main/writes=parallel/page=20",
		"seq/wake=ordered/ids=callsite",
		" main/guard=count-index ",
		"seq/fence=decisions-only/on-reject=repost",
		"main/scheme=sequence/admission=single-runner",
		"seq/",
		"seq//wake=ordered",
		"seq/wake=sideways",
		"seq/a=b=c",
		"nope",
		"/",
		"",
	} {
		f.Add(seed)
	}
	presets := map[string]engine.Knobs{}
	for _, p := range conditions.Presets() {
		presets[p.Name] = p.Knobs
	}
	f.Fuzz(func(t *testing.T, item string) {
		c, err := conditions.Parse(item)
		if err != nil {
			preset, _, _ := strings.Cut(strings.TrimSpace(item), "/")
			if msg := err.Error(); !strings.Contains(msg, strconv.Quote(item)) && !strings.Contains(msg, strconv.Quote(preset)) {
				t.Fatalf("ParseCondition(%q): error %q quotes neither the item nor its preset", item, msg)
			}
			return
		}
		if want := strings.TrimSpace(item); c.Name != want {
			t.Fatalf("ParseCondition(%q).Name = %q, want %q", item, c.Name, want)
		}
		if err := c.Knobs.Policy.Validate(); err != nil {
			t.Fatalf("ParseCondition(%q) accepted invalid knobs: %v", item, err)
		}
		if _, err := eventlog.ParseScheme(string(c.Knobs.Scheme)); err != nil {
			t.Fatalf("ParseCondition(%q) accepted scheme %q: %v", item, c.Knobs.Scheme, err)
		}
		if !slices.Contains(eventlog.Guards(), c.Knobs.Guard) {
			t.Fatalf("ParseCondition(%q) accepted guard %q", item, c.Knobs.Guard)
		}
		preset, _, _ := strings.Cut(c.Name, "/")
		base, ok := presets[preset]
		if !ok {
			t.Fatalf("ParseCondition(%q) accepted unknown preset %q", item, preset)
		}
		spelled := preset
		for _, kn := range engine.KnobTable() {
			if v := kn.Get(c.Knobs); v != kn.Get(base) {
				spelled += "/" + kn.Name + "=" + v
			}
		}
		if back, err := conditions.Parse(spelled); err != nil || back.Knobs != c.Knobs {
			t.Fatalf("ParseCondition(%q) holds %+v, spelled %q, which parses to %+v, %v", item, c.Knobs, spelled, back.Knobs, err)
		}
	})
}

// TestKnobTable walks every knob of the table through ParseCondition: each
// listed value is accepted, a bad one refused with the message stormctl has
// always printed for it, and a slot-only knob refused under another scheme.
func TestKnobTable(t *testing.T) {
	t.Parallel()
	wantBad := map[string]string{
		"scheme":     `condition "main/scheme=bogus": unknown scheme "bogus" (valid: ulid, seq, sequence, slot)`,
		"fence":      `condition "main/fence=bogus": unknown fence "bogus" (valid: none, decisions, decisions-only, all, in-band)`,
		"on-reject":  `condition "main/on-reject=bogus": unknown on-reject "bogus" (valid: rederive, repost, redeliver)`,
		"ids":        `condition "main/ids=bogus": unknown ids "bogus" (valid: positional, callsite)`,
		"wake":       `condition "main/wake=bogus": unknown wake "bogus" (valid: ordered, engine, shuffle, racy)`,
		"admission":  `condition "main/admission=bogus": unknown admission "bogus" (valid: none, single-runner)`,
		"guard":      `condition "main/guard=bogus": unknown guard "bogus" (valid: none, count-index)`,
		"seal":       `condition "slot/seal=bogus": unknown seal "bogus" (valid: none, noop)`,
		"seal-after": `condition "slot/seal-after=bogus": invalid seal-after "bogus": want a positive duration such as 500ms`,
		"page":       `condition "main/page=bogus": invalid page "bogus": want a count of events >= 0 such as 20 (0: the storm's page size)`,
	}
	// sample is a valid value of each knob that has no list of values.
	sample := map[string]string{"seal-after": "1s", "page": "20", "engine": "model"}
	// needs names the preset a value needs that main does not give it.
	needs := map[string]string{"fence=in-band": "slot", "on-reject=redeliver": "seq"}
	var slotOnly []string
	for _, k := range engine.KnobTable() {
		if k.SlotOnly {
			slotOnly = append(slotOnly, k.Name)
		}
	}
	for _, k := range engine.KnobTable() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			preset := "main"
			if k.SlotOnly {
				preset = "slot"
			}
			values := k.Values
			if values == nil {
				v, ok := sample[k.Name]
				if !ok {
					t.Fatalf("knob %s has no values and no sample value here", k.Name)
				}
				values = []string{v}
			}
			for _, v := range values {
				item := cmp.Or(needs[k.Name+"="+v], preset) + "/" + k.Name + "=" + v
				c, err := conditions.Parse(item)
				if err != nil {
					t.Errorf("ParseCondition(%q): %v", item, err)
					continue
				}
				if got := k.Get(c.Knobs); got != v && got != string(engine.WakePolicy(v).Canonical()) {
					t.Errorf("ParseCondition(%q) holds %s=%q", item, k.Name, got)
				}
			}
			item := preset + "/" + k.Name + "=bogus"
			want, ok := wantBad[k.Name]
			if !ok && k.Values == nil && k.Check == nil {
				// Any name parses (engine=): the engine registry refuses an
				// unknown one when a storm is planned (internal/storm's
				// TestConfigValidate).
				return
			}
			if !ok {
				want = fmt.Sprintf("condition %q: unknown %s \"bogus\" (valid: %s)", item, k.Name, strings.Join(k.Values, ", "))
			}
			if _, err := conditions.Parse(item); err == nil || err.Error() != want {
				t.Errorf("ParseCondition(%q) = %v, want %s", item, err, want)
			}
			if !k.SlotOnly {
				return
			}
			defaults := engine.Knobs{Policy: engine.DefaultPolicy()}
			for _, v := range values { // moved from its default under seq: refused
				item := "seq/" + k.Name + "=" + v
				set := defaults
				if err := k.Set(&set, v); err != nil {
					t.Fatalf("Set(%q): %v", v, err)
				}
				want := ""
				if k.Get(set) != k.Get(defaults) {
					want = fmt.Sprintf("condition %q: %s apply to scheme=slot only (this condition's scheme is seq)", item, strings.Join(slotOnly, " and "))
				}
				got := ""
				if _, err := conditions.Parse(item); err != nil {
					got = err.Error()
				}
				if got != want {
					t.Errorf("ParseCondition(%q) = %q, want %q", item, got, want)
				}
			}
		})
	}
}

// TestKnobCells: the conditions listing has a cell per knob column, "-" for
// a slot-only knob under another scheme.
func TestKnobCells(t *testing.T) {
	t.Parallel()
	cols := engine.KnobColumns()
	for _, p := range conditions.Presets() {
		cells := p.Knobs.Cells()
		if len(cells) != len(cols) {
			t.Fatalf("preset %s: %d cells for %d columns %v", p.Name, len(cells), len(cols), cols)
		}
		seal := cells[slices.Index(cols, "seal")]
		if slot := p.Knobs.Scheme == eventlog.SchemeSlot; slot == (seal == "-") {
			t.Errorf("preset %s (scheme %s): seal cell %q", p.Name, p.Knobs.Scheme, seal)
		}
	}
}

// TestKnobColumnsToday pins the listing's columns as they were when the
// table replaced the hand-built listing; a knob added since is allowed
// anywhere among them.
func TestKnobColumnsToday(t *testing.T) {
	t.Parallel()
	today := []string{"scheme", "fence", "on-reject", "ids", "wake", "admission", "guard", "seal"}
	cols := engine.KnobColumns()
	i := 0
	for _, c := range cols {
		if i < len(today) && c == today[i] {
			i++
		}
	}
	if i != len(today) {
		t.Errorf("columns %v lost or reordered today's %v", cols, today)
	}
}
