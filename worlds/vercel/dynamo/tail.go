package dynamo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// WriteAtTail writes a slot run's events at the first free positions from
// from on, allocating each event's position in the transaction that
// writes it (spec 6 slot ids with nothing reserved ahead of a commit, so
// spec 7's sealed log holds no hole to seal): one TransactWriteItems of
//
//	Put slot items  seq p … p+n-1, id eventlog.SlotID(seq), state committed,
//	                the event's body, IF attribute_not_exists(eventId)
//	Put key markers (owner: the event's slot id), IF attribute_not_exists(eventId)
//
// where event i claims the idempotency keys claims[i] (the entity keys of
// a writer that keeps another system's events in these items, as the
// devkit-vercel backend does). A taken position is a lost race for the
// tail: the batch moves on to the position after the lowest one the store
// reported taken and is sent again ("bump"), up to MaxAttempts (then
// ErrContention); positions below from are committed already, so every
// position a write lands on has its predecessors filled and the run stays
// dense. A taken key fails the write with an *eventlog.ConflictError and
// writes nothing; when the store reports both, the key decides. The run
// item's slot counter (Reserve's) is not read or moved: nothing is
// reserved on a run written this way.
//
// Written.Events are evs as committed: ID and Seq their positions,
// CommittedAt when the write was sent, and Attempts says how many
// transactions it took.
func (st *Store) WriteAtTail(ctx context.Context, run eventlog.Run, evs []eventlog.Event, claims [][]string, from int64) (Written, error) {
	done, err := st.enter(ctx)
	if err != nil {
		return Written{}, err
	}
	defer done()
	if err := checkSlotRun(run, "write at the tail"); err != nil {
		return Written{}, err
	}
	n, seen := len(evs), map[string]bool{}
	switch {
	case len(claims) != n:
		return Written{}, fmt.Errorf("dynamo: write at the tail of run %s: %d events, %d claim lists", run.ID, n, len(claims))
	case n == 0:
		return Written{Events: evs}, nil
	case from < 1:
		return Written{}, fmt.Errorf("dynamo: write at the tail of run %s: position %d: %w", run.ID, from, ErrNoSlot)
	}
	for i, ks := range claims {
		if evs[i].Type == "" {
			return Written{}, fmt.Errorf("dynamo: write at the tail of run %s: event %d has no type", run.ID, i)
		}
		for _, k := range ks {
			if seen[k] {
				return Written{}, &eventlog.ConflictError{RunID: run.ID, Key: k}
			}
			seen[k] = true
		}
	}
	if a := n + len(seen); a > MaxTransactItems {
		return Written{}, fmt.Errorf("dynamo: run %s: %d events need %d transaction actions, at most %d: %w", run.ID, n, a, MaxTransactItems, ErrBatchTooLarge)
	}
	out := make([]eventlog.Event, n)
	for attempt := 1; ; attempt++ {
		written := time.Now()
		items, keyOf, err := st.tailItems(run.ID, evs, claims, from, written, out)
		if err != nil {
			return Written{}, err
		}
		_, err = st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return Written{Events: out, Acked: time.Now(), Attempts: attempt}, nil
		}
		c, ok := cancelled(err, -1)
		if !ok {
			return Written{}, storeErr(ctx, "write at the tail of run "+run.ID, err)
		}
		lowest := -1 // the lowest position reported taken, as an index of the batch
		for _, f := range c.failed {
			if k := keyOf[f.index]; k != "" {
				return Written{}, &eventlog.ConflictError{RunID: run.ID, Key: k}
			}
			if lowest < 0 || f.index < lowest {
				lowest = f.index
			}
		}
		switch {
		case lowest >= 0:
			from += int64(lowest) + 1 // bump past the taken position
		case c.other != "":
			return Written{}, fmt.Errorf("dynamo: write at the tail of run %s: transaction cancelled: %s", run.ID, c.other)
		}
		if attempt >= MaxAttempts {
			return Written{}, fmt.Errorf("dynamo: write at the tail of run %s: %d attempts: %w", run.ID, attempt, ErrContention)
		}
		if c.retry && lowest < 0 {
			if err := pause(ctx, attempt); err != nil {
				return Written{}, err
			}
		}
	}
}

// tailItems are WriteAtTail's actions at positions from on (out receives
// the events as they would commit), and the key each action claims (""
// for the slot items).
func (st *Store) tailItems(runID string, evs []eventlog.Event, claims [][]string, from int64, written time.Time, out []eventlog.Event) ([]types.TransactWriteItem, []string, error) {
	var items []types.TransactWriteItem
	var keyOf []string
	table, keys := st.slotTable(runID), aws.String(st.keysTableFor(runID))
	free := aws.String("attribute_not_exists(#sk)")
	names := map[string]string{"#sk": AttrSort}
	for i, e := range evs {
		pos := from + int64(i)
		e.RunID, e.ID, e.Seq, e.CommittedAt = runID, eventlog.SlotID(pos), pos, written
		out[i] = e
		body, err := eventBodyOf(e, written)
		if err != nil {
			return nil, nil, fmt.Errorf("dynamo: run %s: %w", runID, err)
		}
		ks, err := json.Marshal(append([]string{}, claims[i]...))
		if err != nil {
			return nil, nil, fmt.Errorf("dynamo: run %s: event %d's keys: %w", runID, i, err)
		}
		it := key(runID, e.ID)
		it[attrSeq] = n(pos)
		it[attrState] = s(stateCommitted)
		it[attrReservedAt] = n(written.UnixNano())
		it[attrKeys] = s(string(ks))
		it[attrBody] = s(body)
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: table, Item: it, ConditionExpression: free, ExpressionAttributeNames: names,
		}})
		keyOf = append(keyOf, "")
	}
	for i := range evs {
		for _, k := range claims[i] {
			items = append(items, types.TransactWriteItem{Put: &types.Put{
				TableName: keys, Item: markerItem(runID, k, out[i].ID),
				ConditionExpression: free, ExpressionAttributeNames: names,
			}})
			keyOf = append(keyOf, k)
		}
	}
	return items, keyOf, nil
}
