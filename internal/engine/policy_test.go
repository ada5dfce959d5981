package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/base/knob"
	"github.com/stormctl/stormctl/internal/engine"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestPolicyKnobs walks the knob table: every listed value of every knob
// sets and validates, an unknown one is refused by Validate with the message
// that names the knob and its values.
func TestPolicyKnobs(t *testing.T) {
	if err := engine.DefaultPolicy().Validate(); err != nil {
		t.Fatalf("DefaultPolicy: %v", err)
	}
	wantBad := map[string]string{
		"fence":     `unknown fence "bogus" (valid: none, decisions, decisions-only, all, in-band)`,
		"on-reject": `unknown on-reject "bogus" (valid: rederive, repost, redeliver)`,
		"ids":       `unknown ids "bogus" (valid: positional, callsite)`,
		"wake":      `unknown wake "bogus" (valid: ordered, engine, shuffle, racy)`,
		"admission": `unknown admission "bogus" (valid: none, single-runner)`,
		"seal":      `unknown seal "bogus" (valid: none, noop)`,
	}
	for _, k := range engine.PolicyKnobs() {
		t.Run(k.Name, func(t *testing.T) {
			for _, v := range k.Values {
				p := engine.DefaultPolicy()
				if err := k.Set(&p, v); err != nil {
					t.Fatalf("Set(%q): %v", v, err)
				}
				if err := p.Validate(); err != nil {
					t.Errorf("%s=%s: %v", k.Name, v, err)
				}
				if got := k.Get(p); got != v && !(k.Name == "wake" && v == string(engine.WakeRacy) && got == string(engine.WakeShuffle)) {
					t.Errorf("%s=%s reads back as %q", k.Name, v, got)
				}
			}
			p := engine.DefaultPolicy()
			if k.Values == nil || k.Set(&p, "bogus") != nil {
				return // refused in Set: TestPolicyKnobsRefuseInSet
			}
			want, ok := wantBad[k.Name] // today's knobs: the message as it was
			if !ok {
				want = `unknown ` + k.Name + ` "bogus" (valid: ` + strings.Join(k.Values, ", ") + `)`
			}
			if err := p.Validate(); err == nil || err.Error() != want {
				t.Errorf("Validate() = %v, want %s", err, want)
			}
		})
	}
}

// TestPolicyKnobsRefuseInSet: the knobs whose values are parsed, not
// listed, refuse a bad value at once.
func TestPolicyKnobsRefuseInSet(t *testing.T) {
	tests := []struct{ knob, value, want string }{
		{"guard", "lock", `unknown guard "lock" (valid: none, count-index)`},
		{"guard", "", `unknown guard "" (valid: none, count-index)`},
		{"hook-claim", "steal", `unknown hook-claim "steal" (valid: refuse, force)`},
		{"hook-claim", "", `unknown hook-claim "" (valid: refuse, force)`},
		{"seal-after", "soon", `invalid seal-after "soon": want a positive duration such as 500ms`},
		{"seal-after", "0s", `invalid seal-after "0s": want a positive duration such as 500ms`},
		{"seal-after", "-1s", `invalid seal-after "-1s": want a positive duration such as 500ms`},
	}
	for _, tt := range tests {
		k, ok := knob.Find(engine.PolicyKnobs(), tt.knob)
		if !ok {
			t.Fatalf("no knob %q", tt.knob)
		}
		p := engine.DefaultPolicy()
		if err := k.Set(&p, tt.value); err == nil || err.Error() != tt.want {
			t.Errorf("%s=%s: Set() = %v, want %s", tt.knob, tt.value, err, tt.want)
		}
	}
}

// TestPolicyValidateStored: what storm.json holds validates as it did: an
// empty seal (storms before seals), no guard, and a negative seal-after
// refused.
func TestPolicyValidateStored(t *testing.T) {
	p := engine.DefaultPolicy()
	p.Seal, p.SealAfter = "", 2*time.Second
	if err := p.Validate(); err != nil {
		t.Errorf("empty seal: %v", err)
	}
	p.SealAfter = -time.Second
	if err := p.Validate(); err == nil || err.Error() != "invalid seal-after -1s: want a duration >= 0" {
		t.Errorf("negative seal-after: %v", err)
	}
}

// TestPolicyStamp: a run is stamped with the hook-claim mode only when its
// scenario shares tokens across runs; every preset refuses.
func TestPolicyStamp(t *testing.T) {
	force := engine.DefaultPolicy()
	force.HookClaim = engine.HookClaimForce
	tests := []struct {
		name   string
		p      engine.Policy
		shared bool
		want   eventlog.HookClaim
	}{
		{"default_unshared", engine.DefaultPolicy(), false, eventlog.HookClaimNone},
		{"default_shared", engine.DefaultPolicy(), true, eventlog.HookClaimRefuse},
		{"force_unshared", force, false, eventlog.HookClaimNone},
		{"force_shared", force, true, eventlog.HookClaimForce},
	}
	for _, tt := range tests {
		if got := tt.p.Stamp(tt.shared); got != tt.want {
			t.Errorf("%s: Stamp = %q, want %q", tt.name, got, tt.want)
		}
	}
}
