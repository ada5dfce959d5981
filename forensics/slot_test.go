package forensics

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/internal/history"
)

func TestAnalyzeSlots(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(seq int64, typ eventlog.Type, minted, committed int) eventlog.Event {
		return eventlog.Event{ID: eventlog.SlotID(seq), Seq: seq, Type: typ, MintedAt: at(minted), CommittedAt: at(committed)}
	}
	noop := func(seq int64, reserved, sealed int) eventlog.Event {
		e := ev(seq, eventlog.Noop, sealed, sealed)
		e.Payload, _ = json.Marshal(eventlog.NoopPayload{ReservedAt: at(reserved), SealedBy: "inv-3"})
		return e
	}
	hole := func(actor string, slot int64) history.Op {
		return history.Op{Kind: history.OpList, Actor: actor, Err: "hole", Slot: slot, Above: slot + 1}
	}
	tests := []struct {
		name  string
		final []eventlog.Event
		ops   []history.Op
		want  SlotFindings
	}{
		{"dense log, nothing seen", []eventlog.Event{ev(1, eventlog.RunCreated, 0, 1), ev(2, eventlog.StepCreated, 1, 5)}, nil,
			SlotFindings{}},
		{"a slow writer's hole filled by its commit", []eventlog.Event{ev(1, eventlog.RunCreated, 0, 1), ev(2, eventlog.StepCreated, 10, 90), ev(3, eventlog.HookReceived, 20, 21)},
			[]history.Op{hole("inv-1", 2), hole("inv-1", 2), hole("inv-2", 2)},
			SlotFindings{HolesSeen: 2, FillMillis: []float64{80}}},
		{"a dead writer's hole sealed", []eventlog.Event{ev(1, eventlog.RunCreated, 0, 1), noop(2, 10, 1010), ev(3, eventlog.HookReceived, 20, 21)},
			[]history.Op{hole("inv-1", 2), {Kind: history.OpSeal, Actor: "inv-1", Slot: 2, Sealed: true}, {Kind: history.OpAppend, Actor: "step-4", Err: "sealed", Slot: 2}},
			SlotFindings{HolesSeen: 1, Seals: 1, SealedBy: map[string]int{"inv": 1}, SealedWrites: 1, FillMillis: []float64{1000}}},
		{"a hole left in the final log", []eventlog.Event{ev(1, eventlog.RunCreated, 0, 1), ev(4, eventlog.RunFailed, 30, 31)},
			[]history.Op{hole("inv-1", 2)},
			SlotFindings{HolesSeen: 1, FinalHoles: 2}},
		{"a seal and a late commit both visible", []eventlog.Event{ev(1, eventlog.RunCreated, 0, 1), noop(2, 10, 1010), ev(2, eventlog.StepCompleted, 10, 1011)}, nil,
			SlotFindings{Seals: 1, SealRaces: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := AnalyzeSlots(tt.final, tt.ops); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("AnalyzeSlots = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSlotFill(t *testing.T) {
	t.Parallel()
	f := SlotFindings{FillMillis: []float64{5, 1, 3, 2, 4}}
	if p50, p99, m := f.Fill(); p50 != 3 || p99 != 5 || m != 5 {
		t.Errorf("Fill = %v, %v, %v; want 3, 5, 5", p50, p99, m)
	}
	if p50, p99, m := (&SlotFindings{}).Fill(); p50+p99+m != 0 {
		t.Errorf("Fill of nothing = %v, %v, %v", p50, p99, m)
	}
}
