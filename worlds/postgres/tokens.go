package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// claimsToken reports whether a batch of a run under mode claims a hook
// token in the cross-run index (eventlog.Run.HookClaim).
func claimsToken(mode eventlog.HookClaim, d []eventlog.Draft) bool {
	if mode == eventlog.HookClaimNone {
		return false
	}
	for _, x := range d {
		if x.Type == eventlog.HookCreated && x.Token != "" {
			return true
		}
	}
	return false
}

// victim is a takeover's hook_disposed for the run that held the token.
type victim struct {
	runID string
	draft eventlog.Draft
}

// appendClaimULID writes a ulid batch that creates hooks on tokens the
// world indexes across runs: the events are minted, the window spent, then
// one transaction takes each token's advisory lock, reads its holder and
// whether the holder is live (none of its run's liveness keys taken),
// decides (eventlog.ClaimToken), inserts the batch as decided (a
// hook_conflict in place of a refused hook_created), a takeover's
// hook_disposed{forceClaimedBy} into the holder's run (nothing when that
// run disposed of the hook itself meanwhile: its key is taken), and names
// the claimer in the index. All of it commits, or none.
func (w *World) appendClaimULID(ctx context.Context, runID string, run runInfo, d []eventlog.Draft, delay time.Duration) ([]eventlog.Event, error) {
	op := "append to run " + runID
	evs := make([]eventlog.Event, len(d))
	for i, x := range d {
		evs[i] = w.mint(runID, x)
	}
	if err := worlds.SpendWindow(ctx, w.cfg.Latency, delay); err != nil {
		return nil, err
	}
	var b *batch
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		var victims []victim
		for i, x := range d {
			if x.Type != eventlog.HookCreated || x.Token == "" {
				continue
			}
			claim, err := w.decideClaim(ctx, tx, runID, run.claim, x)
			if err != nil {
				return err
			}
			written, vd := claim.Apply(runID, x)
			evs[i].Type, evs[i].Payload = written.Type, written.Payload
			if vd != nil {
				victims = append(victims, victim{runID: claim.Holder.RunID, draft: *vd})
			}
			if claim.Kind != eventlog.ClaimConflict {
				if _, err := tx.Exec(ctx, w.q.setHolder, x.Token, runID, x.CorrelationID); err != nil {
					return err
				}
			}
		}
		drafts := make([]eventlog.Draft, len(evs))
		for i, e := range evs {
			drafts[i] = e.Draft()
		}
		keys, err := checkDrafts(runID, run.basis, drafts)
		if err != nil {
			return err
		}
		b = &batch{runID: runID}
		for i, e := range evs {
			b.add(e, keys[i])
		}
		if _, err := tx.Exec(ctx, w.q.insertULID, b.args()...); err != nil {
			return err
		}
		for _, v := range victims {
			vk, err := keysOf(v.draft)
			if err != nil {
				return err
			}
			vb := &batch{runID: v.runID}
			vb.add(w.mint(v.runID, v.draft), vk)
			if _, err := tx.Exec(ctx, w.q.insertULIDQuiet, vb.args()...); err != nil {
				return fmt.Errorf("tell run %s its hook %s was taken: %w", v.runID, v.draft.CorrelationID, err)
			}
		}
		return nil
	})
	committed := time.Now()
	if err != nil {
		var ce *eventlog.ConflictError
		if errors.As(err, &ce) || b == nil {
			return nil, storeErr(ctx, op, err)
		}
		return nil, w.writeErr(ctx, op, b, err)
	}
	for i := range b.events {
		b.events[i].CommittedAt = committed
	}
	return b.events, nil
}

// decideClaim takes the token's advisory lock for the transaction and
// decides the draft from the index (eventlog.ClaimToken).
func (w *World) decideClaim(ctx context.Context, tx pgx.Tx, runID string, mode eventlog.HookClaim, x eventlog.Draft) (eventlog.Claim, error) {
	if _, err := tx.Exec(ctx, w.q.tokenLock, "hook_token/"+x.Token); err != nil {
		return eventlog.Claim{}, err
	}
	var h eventlog.HookRef
	err := tx.QueryRow(ctx, w.q.tokenHolder, x.Token).Scan(&h.RunID, &h.HookID)
	if errors.Is(err, pgx.ErrNoRows) {
		return eventlog.ClaimToken(mode, runID, x, nil, false), nil
	}
	if err != nil {
		return eventlog.Claim{}, err
	}
	live := false
	if err := tx.QueryRow(ctx, w.q.hookLive, h.RunID, eventlog.LivenessKeys(h.HookID)).Scan(&live); err != nil {
		return eventlog.Claim{}, err
	}
	return eventlog.ClaimToken(mode, runID, x, &h, live), nil
}
