package postgres

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// tokenKeyPrefix starts the second idempotency key of a hook_created draft.
const tokenKeyPrefix = "hook_token/"

// eventKeys are the columns that carry a draft's idempotency keys
// (eventlog.Draft.Keys): every event stores its first key in idem_key, unique
// per run; a hook_created event with a token stores it in token, unique per
// run among hook_created rows (a partial unique index). Under slot a
// reserved row claims its keys the same way, from Reserve on; only a seal
// releases them (a noop's key columns are null).
type eventKeys struct {
	idem  string
	token string // "" when the draft has no token key
}

// keysOf maps d.Keys() onto the key columns, failing if the contract ever
// hands out a key shape the columns cannot hold.
func keysOf(d eventlog.Draft) (eventKeys, error) {
	ks := d.Keys()
	var k eventKeys
	switch {
	case len(ks) == 1:
		k.idem = ks[0]
	case len(ks) == 2 && d.Type == eventlog.HookCreated && ks[1] == tokenKeyPrefix+d.Token:
		k.idem, k.token = ks[0], d.Token
	default:
		return k, fmt.Errorf("draft %s %s: idempotency keys %q do not fit the key columns", d.Type, d.CorrelationID, ks)
	}
	return k, nil
}

// plainKeys returns keys with every plain append's (eventlog.PlainAppend
// on basis: spec 9's step and wait events) made its own: its key plus a
// random suffix, which no other row claims, so the unique index checks
// nothing of it while every row still holds a key (the schema's CHECK).
func plainKeys(basis eventlog.FenceBasis, d []eventlog.Draft, keys []eventKeys) []eventKeys {
	for i, x := range d {
		if eventlog.PlainAppend(basis, x.Type) {
			keys[i].idem += "/plain/" + rand.Text()
		}
	}
	return keys
}

// keys returns the idempotency keys the columns hold, as Draft.Keys spells them.
func (k eventKeys) keys() []string {
	if k.token == "" {
		return []string{k.idem}
	}
	return []string{k.idem, tokenKeyPrefix + k.token}
}

// batch is a checked batch of drafts as column arrays, ready for unnest.
type batch struct {
	runID    string
	events   []eventlog.Event // minted, not yet positioned or committed
	ids      []string
	types    []string
	corrs    []string
	payloads []string // "" for no payload
	tokens   []string // hook tokens of hook_created rows, "" otherwise
	dedups   []string
	idem     []string
	minted   []time.Time
	// tokenKeys lists the non-empty hook tokens, for conflict checks.
	tokenKeys []string
}

// checkDrafts validates drafts (known type, JSON payload, keys that fit the
// columns, no key claimed twice in the batch) and returns their key columns.
func checkDrafts(runID string, basis eventlog.FenceBasis, d []eventlog.Draft) ([]eventKeys, error) {
	out := make([]eventKeys, len(d))
	seen := make(map[string]bool, len(d))
	for i, x := range d {
		if !x.Type.Valid() {
			return nil, fmt.Errorf("postgres: run %s: draft %d: unknown event type %q", runID, i, x.Type)
		}
		if len(x.Payload) > 0 && !json.Valid(x.Payload) {
			return nil, fmt.Errorf("postgres: run %s: draft %d (%s): payload is not valid JSON", runID, i, x.Type)
		}
		k, err := keysOf(x)
		if err != nil {
			return nil, fmt.Errorf("postgres: run %s: %w", runID, err)
		}
		for _, key := range k.keys() {
			if eventlog.PlainAppend(basis, x.Type) {
				break // spec 9: no key of a step or wait event is checked
			}
			if seen[key] {
				return nil, &eventlog.ConflictError{RunID: runID, Key: key}
			}
			seen[key] = true
		}
		out[i] = k
	}
	return out, nil
}

// newBatch turns checked drafts into minted events and column arrays.
func (w *World) newBatch(runID string, d []eventlog.Draft, keys []eventKeys) *batch {
	b := &batch{runID: runID, events: make([]eventlog.Event, 0, len(d))}
	for i, x := range d {
		b.add(w.mint(runID, x), keys[i])
	}
	return b
}

// newSlotBatch is newBatch for a reservation: no id is minted (the slot is
// the id, and only the reserving statement knows it) and every draft is
// minted at the reservation's time at.
func newSlotBatch(runID string, d []eventlog.Draft, keys []eventKeys, at time.Time) *batch {
	b := &batch{runID: runID, events: make([]eventlog.Event, 0, len(d))}
	for i, x := range d {
		b.add(eventlog.Event{RunID: runID, Type: x.Type, CorrelationID: x.CorrelationID, Token: x.Token,
			Dedup: x.Dedup, Payload: x.Payload, MintedAt: at}, keys[i])
	}
	return b
}

// add appends event e, with key columns k, to the batch.
func (b *batch) add(e eventlog.Event, k eventKeys) {
	b.events = append(b.events, e)
	b.ids = append(b.ids, e.ID)
	b.types = append(b.types, string(e.Type))
	b.corrs = append(b.corrs, e.CorrelationID)
	b.payloads = append(b.payloads, string(e.Payload))
	b.tokens = append(b.tokens, k.token)
	b.dedups = append(b.dedups, e.Dedup)
	b.idem = append(b.idem, k.idem)
	b.minted = append(b.minted, e.MintedAt)
	if k.token != "" {
		b.tokenKeys = append(b.tokenKeys, k.token)
	}
}

// conflictKey names the key a conflict on constraint (or, for the sequence
// scheme's pre-check, the taken idem key or token) is about; fallback when
// nothing better is known.
func (b *batch) conflictKey(takenIdem, takenToken string) string {
	switch {
	case takenIdem != "":
		return takenIdem
	case takenToken != "":
		return tokenKeyPrefix + takenToken
	case len(b.idem) > 0:
		return b.idem[0]
	}
	return ""
}

// hasToken reports whether the batch claims hook tokens.
func (b *batch) hasToken() bool { return len(b.tokenKeys) > 0 }

// describe renders the batch's drafts for error messages.
func (b *batch) describe() string {
	s := make([]string, len(b.types))
	for i := range b.types {
		s[i] = b.types[i] + " " + b.corrs[i]
	}
	if len(s) > 4 {
		s = append(slices.Clone(s[:4]), fmt.Sprintf("… (%d drafts)", len(b.types)))
	}
	return strings.Join(s, ", ")
}
