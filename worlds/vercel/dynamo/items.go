package dynamo

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// Key attribute names and the sort keys of the non-event items.
const (
	// AttrRun is the partition key: the run id.
	AttrRun = "runId"
	// AttrSort is the sort key: the event id of an event item, RunSortKey
	// for the run item, KeySortPrefix + key for a key marker.
	AttrSort = "eventId"
	// RunSortKey is the sort key of a run's own item.
	RunSortKey = "#run"
	// KeySortPrefix starts the sort key of an idempotency-key marker.
	KeySortPrefix = "#key#"
)

// Other attributes. Items are lean on purpose: an event is its key, its
// seq (seq runs) and one body attribute.
const (
	attrScheme     = "scheme"
	attrBasis      = "fenceBasis"
	attrGuard      = "guard"
	attrHookClaim  = "hookClaim"        // a run item's eventlog.Run.HookClaim, absent for none
	attrNextSeq    = "next_seq"         // seq runs: events committed (the last seq); slot runs: slots reserved
	attrLastFenced = "last_fenced_seq"  // seq runs: seq of the last fenced event
	attrInBand     = "seq_in_band"      // slot runs fenced in band (spec 9): slots fenced writes reserved
	attrInBandDone = "seq_in_band_done" // … and of them, those committed or sealed (the snapshot's count)
	attrSlotInBand = "in_band"          // a slot item reserved by an in-band write
	attrCreatedAt  = "createdAt"
	attrSeq        = "seq"   // seq and slot runs
	attrBody       = "event" // the rest of the event, JSON (eventBody)
	attrOwner      = "owner" // a key marker's event id
	// Slot items only.
	attrState      = "state"      // stateReserved, stateCommitted or stateNoop
	attrReservedAt = "reservedAt" // unix nanoseconds: when the slot was reserved
	attrKeys       = "keys"       // the keys the slot's reservation claimed, a JSON list
)

// The states of a slot item. Reserve puts it reserved; Commit moves it to
// committed, Seal to noop, each only from reserved, so a slot is filled at
// most once.
const (
	stateReserved  = "reserved"
	stateCommitted = "committed"
	stateNoop      = "noop"
)

// eventBody is an event item's body attribute.
type eventBody struct {
	Type          eventlog.Type   `json:"type"`
	CorrelationID string          `json:"correlationId,omitempty"`
	Token         string          `json:"token,omitempty"`
	Dedup         string          `json:"dedup,omitempty"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	// MintedAt and WrittenAt are unix nanoseconds: when the server minted
	// the id, and when it sent the write that committed the item.
	MintedAt  int64 `json:"mintedAt"`
	WrittenAt int64 `json:"writtenAt"`
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// key is the primary key of one item.
func key(runID, sort string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrRun: s(runID), AttrSort: s(sort)}
}

// runItem is the item of a new run.
func runItem(r eventlog.Run, now time.Time) map[string]types.AttributeValue {
	it := key(r.ID, RunSortKey)
	it[attrScheme] = s(string(r.Scheme))
	it[attrBasis] = s(string(r.FenceBasis))
	it[attrGuard] = s(string(r.Guard))
	if r.HookClaim != eventlog.HookClaimNone {
		it[attrHookClaim] = s(string(r.HookClaim))
	}
	it[attrCreatedAt] = n(now.UnixNano())
	switch r.Scheme {
	case eventlog.SchemeSeq:
		it[attrNextSeq] = n(0)
		it[attrLastFenced] = n(0)
	case eventlog.SchemeSlot:
		it[attrNextSeq] = n(0)
		if r.FenceBasis == eventlog.FenceInBand {
			it[attrInBand] = n(0)
			it[attrInBandDone] = n(0)
		}
	}
	return it
}

// eventItem is the item of one event; seq is stored only when positive.
func eventItem(e eventlog.Event, written time.Time) (map[string]types.AttributeValue, error) {
	body, err := eventBodyOf(e, written)
	if err != nil {
		return nil, err
	}
	it := key(e.RunID, e.ID)
	it[attrBody] = s(body)
	if e.Seq > 0 {
		it[attrSeq] = n(e.Seq)
	}
	return it, nil
}

// reservedItem is the item of a slot reserved at time at for a draft that
// claims keys: no body until Commit or Seal fills it.
func reservedItem(runID string, slot int64, keys string, at time.Time, inBand bool) map[string]types.AttributeValue {
	it := key(runID, eventlog.SlotID(slot))
	it[attrSeq] = n(slot)
	it[attrState] = s(stateReserved)
	it[attrReservedAt] = n(at.UnixNano())
	it[attrKeys] = s(keys)
	if inBand {
		it[attrSlotInBand] = &types.AttributeValueMemberBOOL{Value: true}
	}
	return it
}

// keysOf renders the idempotency keys the store enforces for a draft on a
// run fenced on basis (eventlog.Draft.KeysOn) as a slot item stores them.
func keysOf(basis eventlog.FenceBasis, d eventlog.Draft) string {
	ks := d.KeysOn(basis)
	if ks == nil {
		ks = []string{}
	}
	b, _ := json.Marshal(ks) // a []string always marshals
	return string(b)
}

// eventBodyOf renders an event's body attribute.
func eventBodyOf(e eventlog.Event, written time.Time) (string, error) {
	body, err := json.Marshal(eventBody{
		Type: e.Type, CorrelationID: e.CorrelationID, Token: e.Token, Dedup: e.Dedup, Payload: e.Payload,
		MintedAt: e.MintedAt.UnixNano(), WrittenAt: written.UnixNano(),
	})
	if err != nil {
		return "", fmt.Errorf("event %s: %w", e.ID, err)
	}
	return string(body), nil
}

// slotItem is a decoded slot item.
type slotItem struct {
	Slot       int64
	State      string
	ReservedAt time.Time
	Keys       []string
	// InBand: the slot was reserved by an in-band write (spec 9).
	InBand bool
	// Event is the committed event or the noop (committed and noop items).
	Event eventlog.Event
}

// decodeSlot reads a slot item of any state.
func decodeSlot(it map[string]types.AttributeValue) (slotItem, error) {
	id := str(it, AttrSort)
	slot, ok := eventlog.SlotPosition(id)
	if !ok {
		return slotItem{}, fmt.Errorf("item %s/%s is not a slot item", str(it, AttrRun), id)
	}
	si := slotItem{Slot: slot, State: str(it, attrState)}
	if b, ok := it[attrSlotInBand].(*types.AttributeValueMemberBOOL); ok {
		si.InBand = b.Value
	}
	ns, err := num(it, attrReservedAt)
	if err != nil {
		return si, fmt.Errorf("slot %d: %w", slot, err)
	}
	si.ReservedAt = time.Unix(0, ns).UTC()
	if err := json.Unmarshal([]byte(str(it, attrKeys)), &si.Keys); err != nil {
		return si, fmt.Errorf("slot %d: keys: %w", slot, err)
	}
	switch si.State {
	case stateReserved:
	case stateCommitted, stateNoop:
		if si.Event, err = decodeEvent(it); err != nil {
			return si, err
		}
		if si.Event.Seq != slot {
			return si, fmt.Errorf("slot %d: item carries seq %d", slot, si.Event.Seq)
		}
	default:
		return si, fmt.Errorf("slot %d: unknown state %q", slot, si.State)
	}
	return si, nil
}

// markerItem is the item that claims idempotency key k of a run for event id.
func markerItem(runID, k, id string) map[string]types.AttributeValue {
	it := key(runID, KeySortPrefix+k)
	it[attrOwner] = s(id)
	return it
}

func str(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(it map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %s missing or not a number", name)
	}
	return strconv.ParseInt(v.Value, 10, 64)
}

// decodeRun reads a run item.
func decodeRun(it map[string]types.AttributeValue) (eventlog.Run, error) {
	if str(it, AttrSort) != RunSortKey {
		return eventlog.Run{}, fmt.Errorf("item %s/%s is not a run item", str(it, AttrRun), str(it, AttrSort))
	}
	return eventlog.Run{
		ID:         str(it, AttrRun),
		Scheme:     eventlog.Scheme(str(it, attrScheme)),
		FenceBasis: eventlog.FenceBasis(str(it, attrBasis)),
		Guard:      eventlog.Guard(str(it, attrGuard)),
		HookClaim:  eventlog.HookClaim(str(it, attrHookClaim)),
	}, nil
}

// counters reads a seq run item's counters.
func counters(it map[string]types.AttributeValue) (next, lastFenced int64, err error) {
	if next, err = num(it, attrNextSeq); err != nil {
		return 0, 0, err
	}
	lastFenced, err = num(it, attrLastFenced)
	return next, lastFenced, err
}

// isEventSort reports whether a sort key is an event id or a slot (not the
// run item nor a key marker, which sort under '#').
func isEventSort(sk string) bool { return !strings.HasPrefix(sk, "#") }

// decodeEvent reads an event item. CommittedAt is the time the server sent
// the write.
func decodeEvent(it map[string]types.AttributeValue) (eventlog.Event, error) {
	e := eventlog.Event{RunID: str(it, AttrRun), ID: str(it, AttrSort)}
	var b eventBody
	if err := json.Unmarshal([]byte(str(it, attrBody)), &b); err != nil {
		return e, fmt.Errorf("event %s: body: %w", e.ID, err)
	}
	e.Type, e.CorrelationID, e.Token, e.Dedup, e.Payload = b.Type, b.CorrelationID, b.Token, b.Dedup, b.Payload
	e.MintedAt = time.Unix(0, b.MintedAt).UTC()
	e.CommittedAt = time.Unix(0, b.WrittenAt).UTC()
	if _, has := it[attrSeq]; has {
		var err error
		if e.Seq, err = num(it, attrSeq); err != nil {
			return e, fmt.Errorf("event %s: %w", e.ID, err)
		}
	}
	return e, nil
}
