package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// Reserved is a reservation Reserve took: slots First … First+n-1 of the
// run, at ReservedAt (the store's items carry the same time).
type Reserved struct {
	First      int64
	ReservedAt time.Time
	// Attempts is how many transactions the reservation sent (1 unless it
	// lost races for the counter).
	Attempts int
}

// slotNames are the attribute names of a slot item's conditions.
var slotNames = map[string]string{"#state": attrState, "#ra": attrReservedAt, "#keys": attrKeys, "#body": attrBody}

// checkSlotRun refuses a run whose scheme is not slot.
func checkSlotRun(run eventlog.Run, op string) error {
	if run.Scheme != eventlog.SchemeSlot {
		return fmt.Errorf("dynamo: %s on run %s (scheme %s): %w", op, run.ID, run.Scheme, ErrNotSlotRun)
	}
	return nil
}

// Reserve takes a slot run's next len(d) slots for d, with d's idempotency
// keys, in one TransactWriteItems:
//
//	Update run item   SET next_seq = :next  IF next_seq = :base  (ALL_OLD)
//	Put slot items    (seq base+1 … base+n, state reserved, reservedAt,
//	                  keys), IF attribute_not_exists(eventId)
//	Put key markers   (owner: the slot's id), IF attribute_not_exists(eventId)
//
// Unfenced (f.On false) it takes base from the counter as last seen and
// retries with the counter a lost race returned, up to MaxAttempts, like
// WriteSeq's facts; fenced, base is f.Expected and a failed counter
// condition is an *eventlog.FencedError whose Actual is the counter (slots
// reserved, committed or not), whatever the run's fence basis. A taken key
// is an *eventlog.ConflictError. Nothing is reserved unless everything is;
// readers see none of it (List and Dump skip reserved slots).
func (st *Store) Reserve(ctx context.Context, run eventlog.Run, d []eventlog.Draft, f Fence) (Reserved, error) {
	done, err := st.enter(ctx)
	if err != nil {
		return Reserved{}, err
	}
	defer done()
	if err := checkSlotRun(run, "reserve"); err != nil {
		return Reserved{}, err
	}
	if err := checkDrafts(run, d); err != nil || len(d) == 0 {
		return Reserved{ReservedAt: time.Now().UTC()}, err
	}
	// Reservations of one run through this Store take turns for the
	// transaction, as seq writes do; the counter's condition stays the
	// correctness mechanism.
	rc := st.counterOf(run.ID)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var base int64
	switch {
	case f.On && !inBandFenced(run, f):
		base = f.Expected
	case rc.known:
		base = rc.next
	default:
		if base, err = st.slotCounter(ctx, run.ID, nil); err != nil {
			return Reserved{}, err
		}
	}
	for attempt := 1; ; attempt++ {
		at := time.Now().UTC()
		next := base + int64(len(d))
		items, claims := st.reserveItems(run, base, d, at, f)
		_, err := st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			rc.known, rc.next = true, next
			return Reserved{First: base + 1, ReservedAt: at, Attempts: attempt}, nil
		}
		c, ok := cancelled(err, 0)
		switch {
		case !ok:
			rc.known = false
			return Reserved{}, storeErr(ctx, "reserve slots of run "+run.ID, err)
		case c.counter:
			// The counter moved; fenced, the fence failed. It decides
			// before any key conflict (minidyn names only the first
			// failed item, DynamoDB all of them).
			n, err := st.slotCounter(ctx, run.ID, c.old)
			if err != nil {
				rc.known = false
				return Reserved{}, err
			}
			rc.known, rc.next = true, n
			if inBandFenced(run, f) {
				// The slot counter may have moved (an out-of-band write:
				// take the next slot, as world-postgres 5.0 bumps and
				// retries) or the in-band count (superseded).
				inBand, err := st.inBandCount(ctx, run.ID, c.old)
				if err != nil {
					return Reserved{}, err
				}
				if inBand != f.Expected {
					return Reserved{}, &eventlog.FencedError{RunID: run.ID, Expected: f.Expected, Actual: inBand, InBand: true}
				}
			} else if f.On {
				return Reserved{}, &eventlog.FencedError{RunID: run.ID, Expected: f.Expected, Actual: n}
			}
			base = n
		case c.taken >= 0:
			return Reserved{}, conflict(run.ID, claims, c.taken)
		case c.other != "":
			return Reserved{}, fmt.Errorf("dynamo: reserve slots of run %s: transaction cancelled: %s", run.ID, c.other)
		}
		if attempt >= MaxAttempts {
			return Reserved{}, fmt.Errorf("dynamo: reserve slots of run %s: lost the counter %d times: %w", run.ID, attempt, ErrContention)
		}
		if c.retry {
			if err := pause(ctx, attempt); err != nil {
				return Reserved{}, err
			}
		}
	}
}

// reserveItems are a reservation's actions from base, and the key each
// claims ("" for the counter and the slot items).
func (st *Store) reserveItems(run eventlog.Run, base int64, d []eventlog.Draft, at time.Time, f Fence) ([]types.TransactWriteItem, []string) {
	next := base + int64(len(d))
	counter := st.counterUpdate(run.ID, base, next, Fence{}, run.FenceBasis)
	if inBandFenced(run, f) {
		// spec 9: the in-band count must be the writer's, and moves with
		// the reservation, in the same condition and update.
		*counter.UpdateExpression += ", #inband = :inband"
		*counter.ConditionExpression += " AND #inband = :expected"
		counter.ExpressionAttributeNames["#inband"] = attrInBand
		counter.ExpressionAttributeValues[":inband"] = n(f.Expected + int64(len(d)))
		counter.ExpressionAttributeValues[":expected"] = n(f.Expected)
	}
	items := []types.TransactWriteItem{{Update: counter}}
	claims := []string{""}
	table, keys := aws.String(st.tableFor(run.ID)), aws.String(st.keysTableFor(run.ID))
	free := aws.String("attribute_not_exists(#sk)")
	names := map[string]string{"#sk": AttrSort}
	for i, x := range d {
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: table, Item: reservedItem(run.ID, base+int64(i)+1, keysOf(run.FenceBasis, x), at, inBandFenced(run, f)),
			ConditionExpression: free, ExpressionAttributeNames: names,
		}})
		claims = append(claims, "")
	}
	for i, x := range d {
		id := eventlog.SlotID(base + int64(i) + 1)
		for _, k := range x.KeysOn(run.FenceBasis) {
			items = append(items, types.TransactWriteItem{Put: &types.Put{
				TableName: keys, Item: markerItem(run.ID, k, id),
				ConditionExpression: free, ExpressionAttributeNames: names,
			}})
			claims = append(claims, k)
		}
	}
	return items, claims
}

// inBandDone is the run item's action that moves its in-band count done
// (attrInBandDone) by k filled in-band slots.
func (st *Store) inBandDone(runID string, k int) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(st.keysTableFor(runID)),
		Key:                       key(runID, RunSortKey),
		UpdateExpression:          aws.String("ADD #done :k"),
		ExpressionAttributeNames:  map[string]string{"#done": attrInBandDone},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": n(int64(k))},
	}}
}

// reservedInBand reports whether the reservation at slot first of run was
// an in-band write's (its items say so; only eventlog.FenceInBand runs have
// any): one consistent read, on those runs only.
func (st *Store) reservedInBand(ctx context.Context, run eventlog.Run, first int64) (bool, error) {
	if run.FenceBasis != eventlog.FenceInBand {
		return false, nil
	}
	it, err := st.slotItem(ctx, run.ID, first)
	if err != nil || len(it) == 0 {
		return false, err // no item: the commit's own condition reports it
	}
	si, err := decodeSlot(it)
	if err != nil {
		return false, fmt.Errorf("dynamo: run %s: %w", run.ID, err)
	}
	return si.InBand, nil
}

// inBandFenced reports whether f fences a write on run's in-band count
// (eventlog.FenceInBand, spec 9) rather than on its slot counter.
func inBandFenced(run eventlog.Run, f Fence) bool {
	return f.On && run.FenceBasis == eventlog.FenceInBand
}

// inBandCount reads a slot run's in-band count from the item a failed
// condition returned, else from the run item, consistently.
func (st *Store) inBandCount(ctx context.Context, runID string, old map[string]types.AttributeValue) (int64, error) {
	if len(old) == 0 {
		out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(st.keysTableFor(runID)),
			Key:            key(runID, RunSortKey),
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return 0, storeErr(ctx, "read the in-band count of run "+runID, err)
		}
		old = out.Item
	}
	if _, ok := old[attrInBand]; !ok {
		return 0, nil // no in-band write yet
	}
	v, err := num(old, attrInBand)
	if err != nil {
		return 0, fmt.Errorf("dynamo: run %s: the run item: %w", runID, err)
	}
	return v, nil
}

// slotCounter reads a slot run's counter (slots reserved) from the item a
// failed condition returned, else from the run item, consistently.
func (st *Store) slotCounter(ctx context.Context, runID string, old map[string]types.AttributeValue) (int64, error) {
	if len(old) > 0 {
		if next, err := num(old, attrNextSeq); err == nil {
			return next, nil
		}
	}
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.keysTableFor(runID)),
		Key:            key(runID, RunSortKey),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, storeErr(ctx, "read the slot counter of run "+runID, err)
	}
	if len(out.Item) == 0 {
		return 0, fmt.Errorf("dynamo: run %s: %w", runID, eventlog.ErrNoRun)
	}
	next, err := num(out.Item, attrNextSeq)
	if err != nil {
		return 0, fmt.Errorf("dynamo: run %s: the run item: %w", runID, err)
	}
	return next, nil
}

// Commit fills slots first … first+len(d)-1 of a slot run with d, the
// drafts reserved there at reservedAt, in one TransactWriteItems of one
// Update per slot:
//
//	SET state = committed, event = <the event>
//	IF  state = reserved AND reservedAt = :reservedAt AND keys = :keys
//	(ALL_OLD)
//
// The events carry MintedAt reservedAt (their ids, the slots, were taken
// then). Written.Events are the events as committed (CommittedAt: when the
// write was sent; Acked: when DynamoDB acknowledged it).
//
// If a slot was sealed meanwhile (its item a noop), nothing is committed:
// Commit seals every slot of the reservation still reserved itself (Seal,
// sealed by sealedBy), so the reservation leaves no hole, returns those
// noops in Written.Noops (CommittedAt: each seal's acknowledgement) and
// fails with an *eventlog.SealedError naming the lowest sealed slot. A slot
// with no item fails with ErrNoSlot, one committed already or reserved for
// other keys or at another time with ErrNotReserved, both writing nothing.
func (st *Store) Commit(ctx context.Context, run eventlog.Run, first int64, reservedAt time.Time, d []eventlog.Draft, sealedBy string) (Written, error) {
	done, err := st.enter(ctx)
	if err != nil {
		return Written{}, err
	}
	defer done()
	if err := checkSlotRun(run, "commit"); err != nil {
		return Written{}, err
	}
	if len(d) == 0 {
		return Written{Events: []eventlog.Event{}}, nil
	}
	if first < 1 {
		return Written{}, fmt.Errorf("dynamo: commit to run %s: slot %d: %w", run.ID, first, ErrNoSlot)
	}
	if err := checkDrafts(run, d); err != nil {
		return Written{}, err
	}
	inBand, err := st.reservedInBand(ctx, run, first)
	if err != nil {
		return Written{}, err
	}
	for attempt := 1; ; attempt++ {
		written := time.Now()
		evs := make([]eventlog.Event, len(d))
		items := make([]types.TransactWriteItem, len(d), len(d)+1)
		for i, x := range d {
			slot := first + int64(i)
			evs[i] = eventlog.Event{
				RunID: run.ID, ID: eventlog.SlotID(slot), Seq: slot, Type: x.Type, CorrelationID: x.CorrelationID,
				Token: x.Token, Dedup: x.Dedup, Payload: x.Payload, MintedAt: reservedAt, CommittedAt: written,
			}
			body, err := eventBodyOf(evs[i], written)
			if err != nil {
				return Written{}, fmt.Errorf("dynamo: run %s: %w", run.ID, err)
			}
			items[i] = types.TransactWriteItem{Update: &types.Update{
				TableName:                st.slotTable(run.ID),
				Key:                      key(run.ID, evs[i].ID),
				UpdateExpression:         aws.String("SET #state = :committed, #body = :body"),
				ConditionExpression:      aws.String("#state = :reserved AND #ra = :ra AND #keys = :keys"),
				ExpressionAttributeNames: slotNames,
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":committed": s(stateCommitted), ":body": s(body), ":reserved": s(stateReserved),
					":ra": n(reservedAt.UnixNano()), ":keys": s(keysOf(run.FenceBasis, x)),
				},
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}}
		}
		if inBand {
			items = append(items, st.inBandDone(run.ID, len(d)))
		}
		_, err := st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return Written{Events: evs, Acked: time.Now(), Attempts: attempt}, nil
		}
		c, ok := cancelled(err, -1)
		switch {
		case !ok:
			return Written{}, storeErr(ctx, "commit to run "+run.ID, err)
		case len(c.failed) > 0:
			return st.commitRefused(ctx, run, first, len(d), c.failed, sealedBy)
		case c.other != "":
			return Written{}, fmt.Errorf("dynamo: commit to run %s: transaction cancelled: %s", run.ID, c.other)
		case attempt >= MaxAttempts:
			return Written{}, fmt.Errorf("dynamo: commit to run %s: %d attempts: %w", run.ID, attempt, ErrContention)
		}
		if err := pause(ctx, attempt); err != nil {
			return Written{}, err
		}
	}
}

// commitRefused reads why a commit's conditions failed (the items as they
// were, read again where the store returned none) and acts on it: a sealed
// slot seals the rest of the reservation; anything else is an error.
func (st *Store) commitRefused(ctx context.Context, run eventlog.Run, first int64, count int, failed []failedItem, sealedBy string) (Written, error) {
	var refusal error
	for _, fi := range failed {
		slot := first + int64(fi.index)
		old := fi.old
		if len(old) == 0 {
			var err error
			if old, err = st.slotItem(ctx, run.ID, slot); err != nil {
				return Written{}, err
			}
		}
		var state string
		if len(old) > 0 {
			state = str(old, attrState)
		}
		switch state {
		case stateNoop:
			return st.sealRest(ctx, run, first, count, &eventlog.SealedError{RunID: run.ID, Slot: slot}, sealedBy)
		case "":
			refusal = cmpErr(refusal, fmt.Errorf("dynamo: commit to run %s: slot %d: %w", run.ID, slot, ErrNoSlot))
		case stateCommitted:
			refusal = cmpErr(refusal, fmt.Errorf("dynamo: commit to run %s: slot %d is committed already: %w", run.ID, slot, ErrNotReserved))
		default:
			refusal = cmpErr(refusal, fmt.Errorf("dynamo: commit to run %s: slot %d was reserved for other keys or at another time: %w", run.ID, slot, ErrNotReserved))
		}
	}
	return Written{}, refusal
}

// cmpErr keeps the first error.
func cmpErr(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

// sealRest seals every slot of a refused reservation still reserved and
// returns the noops with the SealedError (joined with the error of a seal
// that failed, which leaves its slot a hole for a reader to seal).
func (st *Store) sealRest(ctx context.Context, run eventlog.Run, first int64, count int, sealed *eventlog.SealedError, sealedBy string) (Written, error) {
	var noops []eventlog.Event
	var errs []error
	for i := range count {
		w, ok, err := st.seal(ctx, run, first+int64(i), sealedBy)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			w.Events[0].CommittedAt = w.Acked
			noops = append(noops, w.Events[0])
		}
	}
	if len(errs) > 0 {
		return Written{Noops: noops}, errors.Join(sealed, fmt.Errorf("dynamo: seal the rest of the reservation: %w", errors.Join(errs...)))
	}
	return Written{Noops: noops}, sealed
}

// Seal fills a slot run's slot with an eventlog.Noop if it is reserved and
// empty, in one TransactWriteItems:
//
//	Update slot item   SET state = noop, event = <the noop>
//	                   IF  state = reserved AND reservedAt = :reservedAt
//	Delete key markers (the keys the slot's reservation claimed)
//	                   IF  owner = <the slot's id>
//
// so its keys are free again. The noop's payload is an
// eventlog.NoopPayload{ReservedAt, SealedBy: sealedBy}; its MintedAt is the
// reservation time. It returns the noop in Written.Events (CommittedAt:
// when the write was sent; Acked: when DynamoDB acknowledged it) and sealed
// true. A slot committed or sealed already (before the read or, racing,
// before the transaction) is left alone: sealed false, nil error. A slot
// with no item (never reserved) fails with ErrNoSlot.
func (st *Store) Seal(ctx context.Context, run eventlog.Run, slot int64, sealedBy string) (Written, bool, error) {
	done, err := st.enter(ctx)
	if err != nil {
		return Written{}, false, err
	}
	defer done()
	if err := checkSlotRun(run, "seal"); err != nil {
		return Written{}, false, err
	}
	return st.seal(ctx, run, slot, sealedBy)
}

func (st *Store) seal(ctx context.Context, run eventlog.Run, slot int64, sealedBy string) (Written, bool, error) {
	if slot < 1 {
		return Written{}, false, fmt.Errorf("dynamo: seal slot %d of run %s: %w", slot, run.ID, ErrNoSlot)
	}
	id := eventlog.SlotID(slot)
	for attempt := 1; ; attempt++ {
		it, err := st.slotItem(ctx, run.ID, slot)
		if err != nil {
			return Written{}, false, err
		}
		if len(it) == 0 {
			return Written{}, false, fmt.Errorf("dynamo: seal slot %d of run %s: %w", slot, run.ID, ErrNoSlot)
		}
		si, err := decodeSlot(it)
		if err != nil {
			return Written{}, false, fmt.Errorf("dynamo: run %s: %w", run.ID, err)
		}
		if si.State != stateReserved {
			return Written{}, false, nil
		}
		payload, err := json.Marshal(eventlog.NoopPayload{ReservedAt: si.ReservedAt, SealedBy: sealedBy})
		if err != nil {
			return Written{}, false, fmt.Errorf("dynamo: seal slot %d of run %s: %w", slot, run.ID, err)
		}
		written := time.Now()
		noop := eventlog.Event{RunID: run.ID, ID: id, Seq: slot, Type: eventlog.Noop, Payload: payload,
			MintedAt: si.ReservedAt, CommittedAt: written}
		body, err := eventBodyOf(noop, written)
		if err != nil {
			return Written{}, false, fmt.Errorf("dynamo: run %s: %w", run.ID, err)
		}
		items := []types.TransactWriteItem{{Update: &types.Update{
			TableName:                st.slotTable(run.ID),
			Key:                      key(run.ID, id),
			UpdateExpression:         aws.String("SET #state = :noop, #body = :body"),
			ConditionExpression:      aws.String("#state = :reserved AND #ra = :ra"),
			ExpressionAttributeNames: map[string]string{"#state": attrState, "#ra": attrReservedAt, "#body": attrBody},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":noop": s(stateNoop), ":body": s(body), ":reserved": s(stateReserved), ":ra": n(si.ReservedAt.UnixNano()),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}}
		for _, k := range si.Keys {
			items = append(items, types.TransactWriteItem{Delete: &types.Delete{
				TableName:                 aws.String(st.keysTableFor(run.ID)),
				Key:                       key(run.ID, KeySortPrefix+k),
				ConditionExpression:       aws.String("#owner = :slot"),
				ExpressionAttributeNames:  map[string]string{"#owner": attrOwner},
				ExpressionAttributeValues: map[string]types.AttributeValue{":slot": s(id)},
			}})
		}
		if si.InBand {
			// A sealed in-band slot still counts. After the key deletes,
			// which cancelled's indexes name; it has no condition, so it
			// never fails one.
			items = append(items, st.inBandDone(run.ID, 1))
		}
		_, err = st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return Written{Events: []eventlog.Event{noop}, Acked: time.Now(), Attempts: attempt}, true, nil
		}
		c, ok := cancelled(err, 0)
		switch {
		case !ok:
			return Written{}, false, storeErr(ctx, fmt.Sprintf("seal slot %d of run %s", slot, run.ID), err)
		case c.counter:
			// The slot left reserved since the read: a commit or another
			// seal won. Its state, returned or read again, says which.
			// Read it again (after the pause) when the store returned
			// none.
			if len(c.old) > 0 && str(c.old, attrState) != stateReserved {
				return Written{}, false, nil
			}
		case c.taken >= 0:
			return Written{}, false, fmt.Errorf("dynamo: seal slot %d of run %s: key marker %s is not held by the slot",
				slot, run.ID, si.Keys[c.taken-1])
		case c.other != "":
			return Written{}, false, fmt.Errorf("dynamo: seal slot %d of run %s: transaction cancelled: %s", slot, run.ID, c.other)
		}
		if attempt >= MaxAttempts {
			return Written{}, false, fmt.Errorf("dynamo: seal slot %d of run %s: %d attempts: %w", slot, run.ID, attempt, ErrContention)
		}
		if err := pause(ctx, attempt); err != nil {
			return Written{}, false, err
		}
	}
}

// slotTable names the table of a run's slot items (its events' table).
func (st *Store) slotTable(runID string) *string { return aws.String(st.tableFor(runID)) }

// slotItem reads one slot item, consistently; nil when there is none.
func (st *Store) slotItem(ctx context.Context, runID string, slot int64) (map[string]types.AttributeValue, error) {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      st.slotTable(runID),
		Key:            key(runID, eventlog.SlotID(slot)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, storeErr(ctx, fmt.Sprintf("read slot %d of run %s", slot, runID), err)
	}
	return out.Item, nil
}

// lastSlot is the sort key past every slot: the largest slot id.
var lastSlot = eventlog.SlotPrefix + strings.Repeat("9", eventlog.SlotDigits)

// listSlots reads the committed and sealed slots past the cursor, in slot
// order, by a consistent Query of the sort-key range from the cursor's next
// slot, Limit one more than the page. Reserved slots are skipped: readers
// never see a reservation, and an empty slot below a committed one on the
// page fails the read with an *eventlog.HoleError (eventlog.CheckSlots).
// Empty slots past the last committed one end the page.
func (st *Store) listSlots(ctx context.Context, run eventlog.Run, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	if after.Seq < 0 {
		return eventlog.Page{}, fmt.Errorf("dynamo: list run %s: negative cursor slot %d", run.ID, after.Seq)
	}
	want := 0
	if limit > 0 {
		want = limit + 1
	}
	var snap *eventlog.Snapshot
	if run.FenceBasis == eventlog.FenceInBand {
		// Read before the page, as spec 9's events.list does: one
		// consistent read of the run item gives both counters.
		out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(st.keysTableFor(run.ID)),
			Key:            key(run.ID, RunSortKey),
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return eventlog.Page{}, storeErr(ctx, "list run "+run.ID+": read the snapshot", err)
		}
		if len(out.Item) == 0 {
			return eventlog.Page{}, fmt.Errorf("dynamo: run %s: %w", run.ID, eventlog.ErrNoRun)
		}
		seq, err := st.slotCounter(ctx, run.ID, out.Item)
		if err != nil {
			return eventlog.Page{}, err
		}
		done, err := num(out.Item, attrInBandDone)
		if err != nil {
			return eventlog.Page{}, fmt.Errorf("dynamo: run %s: the run item: %w", run.ID, err)
		}
		snap = &eventlog.Snapshot{Seq: seq, SeqInBand: done}
	}
	evs, err := st.querySlots(ctx, run.ID, after.Seq+1, want)
	if err != nil {
		return eventlog.Page{}, err
	}
	p := eventlog.PageAfter(after, evs, limit)
	if err := eventlog.CheckSlots(run.ID, after.Seq, p.Events); err != nil {
		return eventlog.Page{}, fmt.Errorf("dynamo: list run %s after slot %d: %w", run.ID, after.Seq, err)
	}
	p.Snapshot = snap
	return p, nil
}

// querySlots reads a run's committed and sealed slots from slot from on, in
// slot order, want of them (0: all), following LastEvaluatedKey. Every
// Query is consistent; reserved slots are read and skipped.
func (st *Store) querySlots(ctx context.Context, runID string, from int64, want int) ([]eventlog.Event, error) {
	in := &dynamodb.QueryInput{
		TableName:                st.slotTable(runID),
		KeyConditionExpression:   aws.String("#pk = :run AND #sk BETWEEN :from AND :to"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrRun, "#sk": AttrSort},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":run": s(runID), ":from": s(eventlog.SlotID(max(from, 1))), ":to": s(lastSlot),
		},
		ConsistentRead:   aws.Bool(true),
		ScanIndexForward: aws.Bool(true),
	}
	return st.queryPages(ctx, runID, "query the slots of run "+runID, in, want, func(it map[string]types.AttributeValue) (eventlog.Event, bool, error) {
		si, err := decodeSlot(it)
		if err != nil {
			return eventlog.Event{}, false, err
		}
		return si.Event, si.State != stateReserved, nil
	})
}
