package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// tokensPartition is the partition of the cross-run hook token index
// (eventlog.Run.HookClaim): not a valid run id, so no run's items share it.
const tokensPartition = "#tokens"

// Attributes of a token item: the hook that holds the token.
const (
	attrHolderRun  = "holderRun"
	attrHolderHook = "holderHook"
)

// ClaimsToken reports whether a batch of run's drafts claims a hook token
// in the cross-run index: WriteHookClaims writes it, not WriteULID.
func ClaimsToken(run eventlog.Run, drafts []eventlog.Draft) bool {
	if run.HookClaim == eventlog.HookClaimNone || run.Scheme != eventlog.SchemeULID {
		return false
	}
	for _, d := range drafts {
		if d.Type == eventlog.HookCreated && d.Token != "" {
			return true
		}
	}
	return false
}

// tokenKey is a token item's key.
func tokenKey(token string) map[string]types.AttributeValue {
	return key(tokensPartition, "#token#"+token)
}

// WriteHookClaims writes a ulid batch that creates hooks on tokens the
// world indexes across runs (ClaimsToken), drafts[i] being evs[i]'s draft
// (its Force flag); mint mints the id of a takeover's hook_disposed in the
// holder's run, at the takeover (as the ingest mints every id). Each attempt reads every token's holder and whether the
// holder is live (none of its run's liveness markers taken), decides
// (eventlog.ClaimToken), and sends one TransactWriteItems: the batch as
// decided (a hook_conflict in place of a refused hook_created) with its key
// markers; per token a Put of the index item naming the claimer (a
// ConditionCheck on a conflict), conditioned on the holder it read; on a
// takeover the hook_disposed{forceClaimedBy} item and its key marker in the
// holder's run, conditioned on the marker being free, and checks that the
// holder's run has not ended; on a conflict, checks that the holder is
// still live. A condition of the index that fails means another writer
// moved it: the write is decided again, up to MaxAttempts. A taken key of
// the batch's own is an *eventlog.ConflictError. Nothing is written unless
// everything is.
func (st *Store) WriteHookClaims(ctx context.Context, run eventlog.Run, evs []eventlog.Event, drafts []eventlog.Draft, mint func(time.Time) string) (Written, error) {
	done, err := st.enterWrite(ctx, run, evs)
	if done == nil {
		return Written{Events: evs}, err
	}
	defer done()
	if len(drafts) != len(evs) {
		return Written{}, fmt.Errorf("dynamo: write to run %s: %d events, %d drafts", run.ID, len(evs), len(drafts))
	}
	for attempt := 1; ; attempt++ {
		out := append([]eventlog.Event(nil), evs...)
		var index []types.TransactWriteItem
		type taken struct {
			runID string
			draft eventlog.Draft
		}
		var takes []taken
		for i, d := range drafts {
			if d.Type != eventlog.HookCreated || d.Token == "" {
				continue
			}
			holder, live, err := st.holder(ctx, d.Token)
			if err != nil {
				return Written{}, err
			}
			claim := eventlog.ClaimToken(run.HookClaim, run.ID, d, holder, live)
			w, vd := claim.Apply(run.ID, d)
			out[i].Type, out[i].Payload = w.Type, w.Payload
			index = append(index, st.indexItems(run.ID, d, claim, holder, live)...)
			if vd != nil {
				takes = append(takes, taken{claim.Holder.RunID, *vd})
			}
		}
		// The victims' disposals are minted once every holder was read:
		// a holder read committed is older than this instant, so its
		// hook_created lists before the disposal (minted before the read,
		// a disposal could sort ahead of the very creation it disposes).
		written := time.Now()
		var victims []eventlog.Event
		for _, tk := range takes {
			victims = append(victims, tk.draft.Event(tk.runID, mint(written), written))
		}
		for i := range out {
			out[i].CommittedAt = written
		}
		items, claims, err := st.puts(run.ID, out, nil, written)
		if err != nil {
			return Written{}, err
		}
		own := len(items)
		items = append(items, index...)
		for _, v := range victims {
			vi, _, err := st.puts(v.RunID, []eventlog.Event{v}, nil, written)
			if err != nil {
				return Written{}, err
			}
			items = append(items, vi...)
		}
		if len(items) > MaxTransactItems {
			return Written{}, fmt.Errorf("dynamo: run %s: the claim needs %d transaction actions, at most %d: %w", run.ID, len(items), MaxTransactItems, ErrBatchTooLarge)
		}
		_, err = st.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			acked := time.Now()
			for i := range victims {
				victims[i].CommittedAt = acked
			}
			return Written{Events: out, Acked: acked, Attempts: attempt, Foreign: victims}, nil
		}
		c, ok := cancelled(err, -1)
		switch {
		case !ok:
			return Written{}, storeErr(ctx, "write to run "+run.ID, err)
		case c.taken >= 0 && c.taken < own:
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

// holder reads a token's holder (nil: none) and whether it is live, both
// consistently.
func (st *Store) holder(ctx context.Context, token string) (*eventlog.HookRef, bool, error) {
	out, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.keysTableFor(tokensPartition)), Key: tokenKey(token), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, false, storeErr(ctx, "read the index entry of token "+token, err)
	}
	if len(out.Item) == 0 {
		return nil, false, nil
	}
	h := &eventlog.HookRef{RunID: str(out.Item, attrHolderRun), HookID: str(out.Item, attrHolderHook)}
	for _, k := range eventlog.LivenessKeys(h.HookID) {
		m, err := st.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(st.keysTableFor(h.RunID)), Key: key(h.RunID, KeySortPrefix+k), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return nil, false, storeErr(ctx, "read run "+h.RunID+"'s key "+k, err)
		}
		if len(m.Item) > 0 {
			return h, false, nil
		}
	}
	return h, true, nil
}

// indexItems are the transaction actions of one claim beside the events:
// the index item (a Put naming the claimer, or a ConditionCheck on a
// conflict), conditioned on the holder read; and the checks that keep the
// holder's liveness as read (a takeover's disposal marker is its own
// condition, put with the victim's event).
func (st *Store) indexItems(runID string, d eventlog.Draft, c eventlog.Claim, holder *eventlog.HookRef, live bool) []types.TransactWriteItem {
	table := aws.String(st.keysTableFor(tokensPartition))
	cond, names, vals := aws.String("attribute_not_exists(#sk)"), map[string]string{"#sk": AttrSort}, map[string]types.AttributeValue(nil)
	if holder != nil {
		cond = aws.String("#hr = :hr AND #hh = :hh")
		names = map[string]string{"#hr": attrHolderRun, "#hh": attrHolderHook}
		vals = map[string]types.AttributeValue{":hr": s(holder.RunID), ":hh": s(holder.HookID)}
	}
	var items []types.TransactWriteItem
	if c.Kind == eventlog.ClaimConflict {
		items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: table, Key: tokenKey(d.Token), ConditionExpression: cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		}})
	} else {
		it := tokenKey(d.Token)
		it[attrHolderRun], it[attrHolderHook] = s(runID), s(d.CorrelationID)
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: table, Item: it, ConditionExpression: cond,
			ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
		}})
	}
	if holder == nil || !live || holder.RunID == runID {
		return items
	}
	keys := eventlog.LivenessKeys(holder.HookID)
	if c.Kind == eventlog.ClaimTakeover {
		keys = keys[1:] // the disposal's marker is put with the victim's event
	}
	for _, k := range keys {
		items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
			TableName: aws.String(st.keysTableFor(holder.RunID)), Key: key(holder.RunID, KeySortPrefix+k),
			ConditionExpression: aws.String("attribute_not_exists(#sk)"), ExpressionAttributeNames: map[string]string{"#sk": AttrSort},
		}})
	}
	return items
}
