package dynamo

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// eventsCondition selects a run's event items: the run item and key markers
// sort under '#', events under eventlog.ServerPrefix.
const eventsCondition = "#pk = :run AND begins_with(#sk, :prefix)"

var eventsNames = map[string]string{"#pk": AttrRun, "#sk": AttrSort}

func eventsValues(runID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{":run": s(runID), ":prefix": s(eventlog.ServerPrefix)}
}

// List returns up to limit events after the cursor in the run's scheme order
// (limit <= 0: all of them). Every read is a Query with ConsistentRead over
// the run's partition, sort key ascending.
//
//   - ulid: ExclusiveStartKey is the cursor's event id, Limit is limit+1
//     (one more tells whether there is more), pages followed through
//     LastEvaluatedKey until enough items came back.
//   - seq: the whole run is read and sorted by the seq attribute (the sort
//     key stays the event id: seed gotcha 7, option (a)); the page is the
//     events past the cursor's seq and must be dense from it
//     (eventlog.CheckDensity), else the read fails with eventlog.ErrGap or
//     eventlog.ErrDuplicate. Concurrent whole-run reads of a run share one
//     Query that started after each of them arrived (readRun).
//   - slot: a Query of the sort-key range from the cursor's next slot (slot
//     ids sort in slot order), Limit one more than the page, reserved slots
//     skipped; the page must have no hole (eventlog.CheckSlots), else the
//     read fails with an *eventlog.HoleError (listSlots).
func (st *Store) List(ctx context.Context, run eventlog.Run, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	done, err := st.enter(ctx)
	if err != nil {
		return eventlog.Page{}, err
	}
	defer done()
	switch run.Scheme {
	case eventlog.SchemeSeq:
		return st.listSeq(ctx, run, after, limit)
	case eventlog.SchemeSlot:
		return st.listSlots(ctx, run, after, limit)
	}
	want := 0
	if limit > 0 {
		want = limit + 1
	}
	var start map[string]types.AttributeValue
	if after.ID != "" {
		start = key(run.ID, after.ID)
	}
	evs, err := st.query(ctx, run.ID, start, want)
	if err != nil {
		return eventlog.Page{}, err
	}
	return eventlog.PageAfter(after, evs, limit), nil
}

func (st *Store) listSeq(ctx context.Context, run eventlog.Run, after eventlog.Cursor, limit int) (eventlog.Page, error) {
	if after.Seq < 0 {
		return eventlog.Page{}, fmt.Errorf("dynamo: list run %s: negative cursor seq %d", run.ID, after.Seq)
	}
	all, err := st.readRun(ctx, run.ID)
	if err != nil {
		return eventlog.Page{}, err
	}
	sortBySeq(all)
	i, _ := slices.BinarySearchFunc(all, after.Seq+1, func(e eventlog.Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
	p := eventlog.PageAfter(after, all[i:], limit)
	if err := eventlog.CheckDensity(run.ID, after.Seq, p.Events); err != nil {
		return eventlog.Page{}, fmt.Errorf("dynamo: list run %s after seq %d: %w", run.ID, after.Seq, err)
	}
	return p, nil
}

// sortBySeq orders events by seq, then id (so duplicates sit together).
func sortBySeq(evs []eventlog.Event) {
	slices.SortStableFunc(evs, func(a, b eventlog.Event) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
	})
}

// Dump returns every event item of the run in scheme order (seq, else id;
// under slot the committed events and noops, holes and all) without the
// density assertion, so forensics can count what a reader would refuse.
func (st *Store) Dump(ctx context.Context, run eventlog.Run) ([]eventlog.Event, error) {
	done, err := st.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if run.Scheme == eventlog.SchemeSlot {
		return st.querySlots(ctx, run.ID, 1, 0)
	}
	evs, err := st.readRun(ctx, run.ID)
	if err == nil && run.Scheme == eventlog.SchemeSeq {
		sortBySeq(evs)
	}
	return evs, err
}

// query reads a run's event items in sort-key order from start (exclusive;
// nil: the beginning), want of them (0: all), following LastEvaluatedKey.
// Items that are not events are skipped.
func (st *Store) query(ctx context.Context, runID string, start map[string]types.AttributeValue, want int) ([]eventlog.Event, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(st.tableFor(runID)),
		KeyConditionExpression:    aws.String(eventsCondition),
		ExpressionAttributeNames:  eventsNames,
		ExpressionAttributeValues: eventsValues(runID),
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(true),
		ExclusiveStartKey:         start,
	}
	return st.queryPages(ctx, runID, "query run "+runID, in, want, func(it map[string]types.AttributeValue) (eventlog.Event, bool, error) {
		if !isEventSort(str(it, AttrSort)) {
			return eventlog.Event{}, false, nil
		}
		e, err := decodeEvent(it)
		return e, err == nil, err
	})
}

// queryPages runs in page after page from its ExclusiveStartKey, following
// LastEvaluatedKey, until want events are kept (0: all) or the items run
// out. keep decodes an item and says whether it is one of the events
// asked for. what names the read in a store error.
func (st *Store) queryPages(ctx context.Context, runID, what string, in *dynamodb.QueryInput, want int,
	keep func(map[string]types.AttributeValue) (eventlog.Event, bool, error)) ([]eventlog.Event, error) {
	var out []eventlog.Event
	for {
		if want > 0 {
			in.Limit = aws.Int32(int32(want - len(out)))
		}
		res, err := st.db.Query(ctx, in)
		if err != nil {
			return nil, storeErr(ctx, what, err)
		}
		for _, it := range res.Items {
			e, ok, err := keep(it)
			if err != nil {
				return nil, fmt.Errorf("dynamo: run %s: %w", runID, err)
			}
			if ok {
				out = append(out, e)
			}
		}
		if len(res.LastEvaluatedKey) == 0 || (want > 0 && len(out) >= want) {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}
