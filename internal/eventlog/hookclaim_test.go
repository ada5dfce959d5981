package eventlog

import (
	"encoding/json"
	"testing"
	"time"
)

var zero time.Time

// TestClaimToken: the rule every model world applies to a hook_created of
// a run that shares tokens, from the token's holder and its liveness.
func TestClaimToken(t *testing.T) {
	other := &HookRef{RunID: "B", HookID: "hb"}
	own := &HookRef{RunID: "A", HookID: "hx"}
	tests := []struct {
		name   string
		mode   HookClaim
		force  bool
		holder *HookRef
		live   bool
		want   ClaimKind
	}{
		{"free", HookClaimRefuse, false, nil, false, ClaimTake},
		{"free_forced", HookClaimForce, true, nil, false, ClaimTake},
		{"held_dead", HookClaimRefuse, false, other, false, ClaimTake},
		{"held_live_refuse", HookClaimRefuse, false, other, true, ClaimConflict},
		{"held_live_refuse_forced", HookClaimRefuse, true, other, true, ClaimConflict},
		{"held_live_force_unforced", HookClaimForce, false, other, true, ClaimConflict},
		{"held_live_force_forced", HookClaimForce, true, other, true, ClaimTakeover},
		{"held_by_own_run", HookClaimForce, true, own, true, ClaimTake},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Draft{Type: HookCreated, CorrelationID: "ha", Token: "tok", Force: tt.force}
			c := ClaimToken(tt.mode, "A", d, tt.holder, tt.live)
			if c.Kind != tt.want {
				t.Fatalf("ClaimToken = %v, want %v", c.Kind, tt.want)
			}
			w, victim := c.Apply("A", d)
			switch tt.want {
			case ClaimTake:
				if w.Type != HookCreated || victim != nil || ForceClaimedFrom(w.Event("A", "e", zero)) != nil {
					t.Errorf("take wrote %s (victim %v), want the hook_created as drafted", w.Type, victim)
				}
			case ClaimConflict:
				var p HookConflictData
				if w.Type != HookConflict || victim != nil || json.Unmarshal(w.Payload, &p) != nil ||
					p.ConflictingRunID != "B" || p.Token != "tok" || p.ForceRefused != tt.force {
					t.Errorf("conflict wrote %s %s (victim %v)", w.Type, w.Payload, victim)
				}
			case ClaimTakeover:
				from := ForceClaimedFrom(w.Event("A", "e", zero))
				if w.Type != HookCreated || from == nil || *from != *other {
					t.Errorf("takeover wrote %s %s, want a hook_created from B/hb", w.Type, w.Payload)
				}
				if victim == nil || victim.Type != HookDisposed || victim.CorrelationID != "hb" {
					t.Fatalf("takeover's victim draft = %+v, want B's hook_disposed of hb", victim)
				}
				by := ForceClaimedBy(victim.Event("B", "v", zero))
				if by == nil || *by != (HookRef{RunID: "A", HookID: "ha"}) {
					t.Errorf("the victim's disposal names %v, want A/ha", by)
				}
			}
		})
	}
}

// TestCheckHookClaim: the stamp is refused on schemes the index is not
// built for, and unknown modes anywhere.
func TestCheckHookClaim(t *testing.T) {
	tests := []struct {
		run Run
		ok  bool
	}{
		{Run{Scheme: SchemeSlot}, true},
		{Run{Scheme: SchemeULID, HookClaim: HookClaimRefuse}, true},
		{Run{Scheme: SchemeULID, HookClaim: HookClaimForce}, true},
		{Run{Scheme: SchemeSeq, HookClaim: HookClaimForce}, false},
		{Run{Scheme: SchemeSlot, HookClaim: HookClaimRefuse}, false},
		{Run{Scheme: SchemeULID, HookClaim: "steal"}, false},
	}
	for _, tt := range tests {
		if err := tt.run.CheckHookClaim(); (err == nil) != tt.ok {
			t.Errorf("%s/%q: CheckHookClaim() = %v, want ok=%v", tt.run.Scheme, tt.run.HookClaim, err, tt.ok)
		}
	}
}
