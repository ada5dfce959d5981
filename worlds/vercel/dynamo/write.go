package dynamo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stormctl/stormctl/internal/base/clock"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// MaxTransactItems is the most actions one TransactWriteItems may hold
// (DynamoDB's limit). A batch needs one per event, one per idempotency key
// and, under seq, one for the run item.
const MaxTransactItems = 100

// MaxAttempts bounds how often a seq write retries after losing the race
// for the run's counter item to another writer.
const MaxAttempts = 50

// Fence is the precondition of a fenced seq append.
type Fence struct {
	// On: the batch is fenced; otherwise it is a fact append.
	On bool
	// Expected is the number of events the writer loaded.
	Expected int64
}

// Written is what a write committed.
type Written struct {
	// Events are the events as committed: positioned under seq.
	Events []eventlog.Event
	// Acked is the server's clock when DynamoDB acknowledged the write:
	// observed by the server, not a store commit timestamp.
	Acked time.Time
	// Attempts is how many transactions the write sent (1 unless it lost
	// races for the counter).
	Attempts int
	// Noops are the seals a refused slot Commit wrote itself over the rest
	// of its reservation, each with CommittedAt its acknowledgement.
	Noops []eventlog.Event
	// Foreign are the events the write put into other runs' logs (a
	// takeover's hook_disposed{forceClaimedBy}, WriteHookClaims), each
	// with CommittedAt its acknowledgement.
	Foreign []eventlog.Event
}

// Actions returns how many transaction actions a batch of drafts needs
// under the scheme (under slot: its Reserve, the largest of its
// transactions).
func Actions(scheme eventlog.Scheme, d []eventlog.Draft) int {
	k := 0
	for _, x := range d {
		k += 1 + len(x.Keys())
	}
	if scheme == eventlog.SchemeSeq || scheme == eventlog.SchemeSlot {
		k++
	}
	return k
}

// checkBatch validates minted events: known types, no key claimed twice in
// the batch, within one transaction.
func checkBatch(run eventlog.Run, evs []eventlog.Event) error {
	drafts := make([]eventlog.Draft, len(evs))
	for i, e := range evs {
		drafts[i] = e.Draft()
	}
	return checkDrafts(run, drafts)
}

// enterWrite enters the store for a WriteULID or WriteSeq of evs to run
// (done leaves it) and refuses what those cannot write: a batch to a slot
// run (written through Reserve and Commit) or one checkBatch refuses. A nil
// done is the write's end: err, or nil for an empty batch.
func (st *Store) enterWrite(ctx context.Context, run eventlog.Run, evs []eventlog.Event) (done func(), err error) {
	if done, err = st.enter(ctx); err != nil {
		return nil, err
	}
	if run.Scheme == eventlog.SchemeSlot {
		err = fmt.Errorf("dynamo: write to run %s: a slot run is written through Reserve and Commit: %w", run.ID, ErrInvalidRun)
	} else {
		err = checkBatch(run, evs)
	}
	if err != nil || len(evs) == 0 {
		done()
		return nil, err
	}
	return done, nil
}

// checkDrafts validates a batch of drafts: known types, no key claimed
// twice in the batch, within one transaction.
func checkDrafts(run eventlog.Run, drafts []eventlog.Draft) error {
	seen := make(map[string]bool, len(drafts))
	for i, d := range drafts {
		if !d.Type.Valid() {
			return fmt.Errorf("dynamo: run %s: event %d: unknown event type %q", run.ID, i, d.Type)
		}
		for _, k := range d.KeysOn(run.FenceBasis) {
			if seen[k] {
				return &eventlog.ConflictError{RunID: run.ID, Key: k}
			}
			seen[k] = true
		}
	}
	if a := Actions(run.Scheme, drafts); a > MaxTransactItems {
		return fmt.Errorf("dynamo: run %s: %d events need %d transaction actions, at most %d: %w", run.ID, len(drafts), a, MaxTransactItems, ErrBatchTooLarge)
	}
	return nil
}

// puts are the transaction actions that write a batch's event items and key
// markers, each conditioned on its key being free, and the idempotency key
// each action claims ("" for events). Event i claims keysOf[i], or its
// draft's keys when keysOf is nil.
func (st *Store) puts(runID string, evs []eventlog.Event, keysOf [][]string, written time.Time) ([]types.TransactWriteItem, []string, error) {
	var items []types.TransactWriteItem
	var claims []string
	table, keys := aws.String(st.tableFor(runID)), aws.String(st.keysTableFor(runID))
	free := aws.String("attribute_not_exists(#sk)")
	names := map[string]string{"#sk": AttrSort}
	for _, e := range evs {
		it, err := eventItem(e, written)
		if err != nil {
			return nil, nil, fmt.Errorf("dynamo: run %s: %w", runID, err)
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: table, Item: it, ConditionExpression: free, ExpressionAttributeNames: names,
		}})
		claims = append(claims, "")
	}
	for i, e := range evs {
		ks := e.Draft().Keys()
		if keysOf != nil {
			ks = keysOf[i]
		}
		for _, k := range ks {
			items = append(items, types.TransactWriteItem{Put: &types.Put{
				TableName: keys, Item: markerItem(runID, k, e.ID),
				ConditionExpression: free, ExpressionAttributeNames: names,
			}})
			claims = append(claims, k)
		}
	}
	return items, claims, nil
}

// conflict turns a failed attribute_not_exists at action i into the error
// it stands for.
func conflict(runID string, claims []string, i int) error {
	if i >= 0 && i < len(claims) && claims[i] != "" {
		return &eventlog.ConflictError{RunID: runID, Key: claims[i]}
	}
	return fmt.Errorf("dynamo: run %s: event id already taken (action %d of the transaction)", runID, i)
}

// WriteULID writes a ulid run's events (ids minted, not positioned) in one
// TransactWriteItems: one conditioned Put per event and per idempotency key
// marker, so a taken key fails the whole batch with an
// *eventlog.ConflictError and writes nothing.
func (st *Store) WriteULID(ctx context.Context, run eventlog.Run, evs []eventlog.Event) (Written, error) {
	done, err := st.enterWrite(ctx, run, evs)
	if done == nil {
		return Written{Events: evs}, err
	}
	defer done()
	return st.writeULID(ctx, run, evs, nil)
}

// WriteClaims writes a ulid run's events as WriteULID does, but event i
// claims the idempotency keys claims[i] (none, one or more) instead of its
// draft's, and its type is the writer's business: for a store that keeps
// another system's events in these items (the devkit-vercel world's
// emulation of world-vercel's backend, whose keys are its entities').
func (st *Store) WriteClaims(ctx context.Context, run eventlog.Run, evs []eventlog.Event, claims [][]string) (Written, error) {
	done, err := st.enter(ctx)
	if err != nil {
		return Written{}, err
	}
	defer done()
	n, seen := len(evs), map[string]bool{}
	switch {
	case run.Scheme != eventlog.SchemeULID:
		return Written{}, fmt.Errorf("dynamo: write claims to run %s: scheme %s: %w (want ulid)", run.ID, run.Scheme, ErrInvalidRun)
	case len(claims) != n:
		return Written{}, fmt.Errorf("dynamo: write claims to run %s: %d events, %d claim lists", run.ID, n, len(claims))
	case n == 0:
		return Written{Events: evs}, nil
	}
	for i, ks := range claims {
		if evs[i].Type == "" {
			return Written{}, fmt.Errorf("dynamo: write claims to run %s: event %d has no type", run.ID, i)
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
	return st.writeULID(ctx, run, evs, claims)
}

// writeULID is WriteULID's transaction, entered and checked: keysOf as
// for puts.
func (st *Store) writeULID(ctx context.Context, run eventlog.Run, evs []eventlog.Event, keysOf [][]string) (Written, error) {
	for attempt := 1; ; attempt++ {
		written := time.Now()
		for i := range evs {
			evs[i].CommittedAt = written
		}
		items, claims, err := st.puts(run.ID, evs, keysOf, written)
		if err != nil {
			return Written{}, err
		}
		_, err = st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return Written{Events: evs, Acked: time.Now(), Attempts: attempt}, nil
		}
		c, ok := cancelled(err, -1)
		switch {
		case !ok:
			return Written{}, storeErr(ctx, "write to run "+run.ID, err)
		case c.taken >= 0:
			return Written{}, conflict(run.ID, claims, c.taken)
		case c.other != "":
			return Written{}, fmt.Errorf("dynamo: write to run %s: transaction cancelled: %s", run.ID, c.other)
		case attempt >= MaxAttempts:
			return Written{}, fmt.Errorf("dynamo: write to run %s: %d attempts: %w", run.ID, attempt, ErrContention)
		}
		if err := pause(ctx, attempt); err != nil {
			return Written{}, err
		}
	}
}

// WriteSeq writes a seq run's events (ids minted) at the next positions, in
// one TransactWriteItems that also moves the run item's counter:
//
//	Update run item  SET next_seq = :new [, last_fenced_seq = :new]
//	                 IF  next_seq = :base [AND last_fenced_seq <= :expected]
//	Put event items  (seq = base+1 … base+n), IF attribute_not_exists(eventId)
//	Put key markers  IF attribute_not_exists(eventId)
//
// Facts (f.On false) take base from the counter as last seen (read
// consistently when unknown) and retry with the counter the failed
// transaction returned (ALL_OLD) when another writer got there first, up to
// MaxAttempts. A fenced batch under eventlog.FenceOnLog
// takes base = f.Expected and is rejected with an *eventlog.FencedError when
// the condition fails (Actual: the run's next_seq); under
// eventlog.FenceOnDecisions it is rejected only when a fenced append landed
// past f.Expected (Actual: last_fenced_seq) or the writer is ahead of the
// log, and retried like a fact when only facts moved the counter. A taken
// idempotency key fails with an *eventlog.ConflictError. Nothing is written
// unless everything is.
func (st *Store) WriteSeq(ctx context.Context, run eventlog.Run, evs []eventlog.Event, f Fence) (Written, error) {
	done, err := st.enterWrite(ctx, run, evs)
	if done == nil {
		return Written{Events: evs}, err
	}
	defer done()
	// The Store's writers of one run take turns for the transaction (never
	// for the window, spent before): a throughput optimization, as
	// Temporal's per-run lock is; the condition on the counter stays the
	// correctness mechanism, and fences writers of other processes.
	rc := st.counterOf(run.ID)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	byLog := f.On && run.FenceBasis == eventlog.FenceOnLog
	var base, lastFenced int64
	fresh := false // base and lastFenced came from the store, not the cache
	switch {
	case byLog:
		base = f.Expected
	case rc.known:
		base, lastFenced = rc.next, rc.lastFenced
	default:
		if base, lastFenced, err = st.counters(ctx, run.ID); err != nil {
			return Written{}, err
		}
		fresh = true
	}
	for attempt := 1; ; attempt++ {
		if f.On && !byLog && (lastFenced > f.Expected || base < f.Expected) {
			// Only the store rejects: a cached view can lag another Store's
			// writes, so read the counters before deciding.
			if !fresh {
				if base, lastFenced, err = st.counters(ctx, run.ID); err != nil {
					rc.known = false
					return Written{}, err
				}
				rc.known, rc.next, rc.lastFenced, fresh = true, base, lastFenced, true
			}
			if lastFenced > f.Expected {
				return Written{}, &eventlog.FencedError{RunID: run.ID, Expected: f.Expected, Actual: lastFenced}
			}
			if base < f.Expected {
				return Written{}, &eventlog.FencedError{RunID: run.ID, Expected: f.Expected, Actual: base}
			}
		}
		written := time.Now()
		for i := range evs {
			evs[i].Seq = base + int64(i) + 1
			evs[i].CommittedAt = written
		}
		next := base + int64(len(evs))
		items := []types.TransactWriteItem{{Update: st.counterUpdate(run.ID, base, next, f, run.FenceBasis)}}
		puts, claims, err := st.puts(run.ID, evs, nil, written)
		if err != nil {
			return Written{}, err
		}
		items = append(items, puts...)
		claims = append([]string{""}, claims...)
		_, err = st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			rc.known, rc.next = true, next
			if f.On {
				rc.lastFenced = next
			}
			return Written{Events: evs, Acked: time.Now(), Attempts: attempt}, nil
		}
		c, ok := cancelled(err, 0)
		switch {
		case !ok:
			rc.known = false
			return Written{}, storeErr(ctx, "write to run "+run.ID, err)
		case c.counter:
			// The counter moved (or, fenced, the fence failed). A real
			// DynamoDB reports every failed condition, minidyn only the
			// first: the fence decides before any key conflict.
			n, fenced, err := st.countersFrom(ctx, run.ID, c.old)
			if err != nil {
				rc.known = false
				return Written{}, err
			}
			rc.known, rc.next, rc.lastFenced = true, n, fenced
			fresh = true
			if byLog {
				return Written{}, &eventlog.FencedError{RunID: run.ID, Expected: f.Expected, Actual: n}
			}
			base, lastFenced = n, fenced
		case c.taken >= 0:
			return Written{}, conflict(run.ID, claims, c.taken)
		case c.other != "":
			return Written{}, fmt.Errorf("dynamo: write to run %s: transaction cancelled: %s", run.ID, c.other)
		}
		if attempt >= MaxAttempts {
			return Written{}, fmt.Errorf("dynamo: write to run %s: lost the counter %d times: %w", run.ID, attempt, ErrContention)
		}
		if c.retry {
			if err := pause(ctx, attempt); err != nil {
				return Written{}, err
			}
		}
	}
}

// runCounter is what the Store last saw of a seq run's counter, and the
// turn its writers take for the transaction.
type runCounter struct {
	mu               sync.Mutex
	known            bool
	next, lastFenced int64
}

func (st *Store) counterOf(runID string) *runCounter {
	if v, ok := st.seqCounters.Load(runID); ok {
		return v.(*runCounter)
	}
	v, _ := st.seqCounters.LoadOrStore(runID, &runCounter{})
	return v.(*runCounter)
}

// counterUpdate is the run item's action of a seq write from base to next:
// facts move next_seq if it is still base; a fenced batch also sets
// last_fenced_seq, and under FenceOnDecisions requires that no fenced
// append landed past the writer's view.
func (st *Store) counterUpdate(runID string, base, next int64, f Fence, basis eventlog.FenceBasis) *types.Update {
	set := "SET #next = :next"
	cond := "#next = :base"
	names := map[string]string{"#next": attrNextSeq}
	values := map[string]types.AttributeValue{":next": n(next), ":base": n(base)}
	if f.On {
		set += ", #fenced = :next"
		names["#fenced"] = attrLastFenced
		if basis == eventlog.FenceOnDecisions {
			cond += " AND #fenced <= :expected"
			values[":expected"] = n(f.Expected)
		}
	}
	return &types.Update{
		TableName:                           aws.String(st.keysTableFor(runID)),
		Key:                                 key(runID, RunSortKey),
		UpdateExpression:                    aws.String(set),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// counters reads a seq run's counters from its item, consistently.
func (st *Store) counters(ctx context.Context, runID string) (next, lastFenced int64, err error) {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.keysTableFor(runID)),
		Key:            key(runID, RunSortKey),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, 0, storeErr(ctx, "read the counter of run "+runID, err)
	}
	if len(out.Item) == 0 {
		return 0, 0, fmt.Errorf("dynamo: run %s: %w", runID, eventlog.ErrNoRun)
	}
	next, lastFenced, err = counters(out.Item)
	if err != nil {
		return 0, 0, fmt.Errorf("dynamo: run %s: the run item: %w", runID, err)
	}
	return next, lastFenced, nil
}

// countersFrom reads the counters from the item a failed condition
// returned, or from the table when the store returned none.
func (st *Store) countersFrom(ctx context.Context, runID string, old map[string]types.AttributeValue) (next, lastFenced int64, err error) {
	if len(old) > 0 {
		if next, lastFenced, err = counters(old); err == nil {
			return next, lastFenced, nil
		}
	}
	return st.counters(ctx, runID)
}

// pause sleeps a little before retrying a transaction that collided with
// another (TransactionConflict): a random time up to attempt x 200 µs, at
// most 10 ms, so that they do not retry in lockstep.
func pause(ctx context.Context, attempt int) error {
	limit := min(time.Duration(attempt)*200*time.Microsecond, 10*time.Millisecond)
	return clock.Sleep(ctx, time.Duration(rand.Int64N(int64(limit)))+time.Microsecond)
}

// Count returns the number of events a run holds, by one consistent Query
// with Select COUNT over the run's event items: the legacy count guard's
// check, taken before (and apart from) the write it guards.
func (st *Store) Count(ctx context.Context, runID string) (int64, error) {
	done, err := st.enter(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	var total int64
	var start map[string]types.AttributeValue
	for {
		out, err := st.db.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(st.tableFor(runID)),
			KeyConditionExpression:    aws.String(eventsCondition),
			ExpressionAttributeNames:  eventsNames,
			ExpressionAttributeValues: eventsValues(runID),
			ConsistentRead:            aws.Bool(true),
			Select:                    types.SelectCount,
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return 0, storeErr(ctx, "count the events of run "+runID, err)
		}
		total += int64(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return total, nil
		}
		start = out.LastEvaluatedKey
	}
}
