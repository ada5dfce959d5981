package dynamo_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds/vercel/dynamo"
)

// tailEvents are n events of a run to write at its tail (ids are the
// store's to give).
func tailEvents(runID string, types ...eventlog.Type) []eventlog.Event {
	now := time.Now().UTC()
	out := make([]eventlog.Event, len(types))
	for i, typ := range types {
		out[i] = eventlog.Event{RunID: runID, Type: typ, CorrelationID: fmt.Sprintf("c%d", i), Payload: []byte(`{"k":"v"}`), MintedAt: now}
	}
	return out
}

// ids are the events' ids.
func ids(evs []eventlog.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestWriteAtTail: positions are allocated at commit, from the position
// asked for or past it when it is taken ("bump"), dense; a taken key
// fails the write whole; only slot runs are written this way.
func TestWriteAtTail(t *testing.T) {
	st := open(t, embedded(t), dynamo.Config{TablePerRun: true})
	slot := func(p int64) string { return eventlog.SlotID(p) }
	for _, tt := range []struct {
		name string
		// before are the writes made first: each a batch's keys, from 1.
		before [][][]string
		from   int64
		claims [][]string
		scheme eventlog.Scheme
		want   []string // ids written; nil with wantErr
		// wantErr is matched with errors.Is; conflict says an
		// *eventlog.ConflictError naming the key.
		wantErr  error
		conflict string
	}{
		{name: "a fresh run from 1", from: 1, claims: [][]string{{"run"}, nil}, want: []string{slot(1), slot(2)}},
		{name: "at the tail", before: [][][]string{{nil, nil}}, from: 3, claims: [][]string{nil}, want: []string{slot(3)}},
		{name: "from a stale position: bumped past the taken ones", before: [][][]string{{nil, nil, nil}}, from: 1, claims: [][]string{nil, nil},
			want: []string{slot(4), slot(5)}},
		{name: "a taken key writes nothing", before: [][][]string{{{"step/s1"}}}, from: 2, claims: [][]string{nil, {"step/s1"}}, conflict: "step/s1"},
		{name: "a key taken at a stale position: the key decides", before: [][][]string{{{"step/s1"}, nil}}, from: 1, claims: [][]string{{"step/s1"}},
			conflict: "step/s1"},
		{name: "one key twice in a batch", from: 1, claims: [][]string{{"hook/h"}, {"hook/h"}}, conflict: "hook/h"},
		{name: "below position 1", from: 0, claims: [][]string{nil}, wantErr: dynamo.ErrNoSlot},
		{name: "not a slot run", scheme: eventlog.SchemeULID, from: 1, claims: [][]string{nil}, wantErr: dynamo.ErrNotSlotRun},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			sch := cmpScheme(tt.scheme)
			run := eventlog.Run{ID: "wrun_" + fmt.Sprint(time.Now().UnixNano()), Scheme: sch}
			if err := st.CreateRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			next := int64(1)
			for _, b := range tt.before {
				types := make([]eventlog.Type, len(b))
				for i := range types {
					types[i] = eventlog.StepCreated
				}
				w, err := st.WriteAtTail(ctx, run, tailEvents(run.ID, types...), b, next)
				if err != nil {
					t.Fatalf("write before: %v", err)
				}
				next += int64(len(w.Events))
			}
			types := make([]eventlog.Type, len(tt.claims))
			for i := range types {
				types[i] = eventlog.StepCompleted
			}
			w, err := st.WriteAtTail(ctx, run, tailEvents(run.ID, types...), tt.claims, tt.from)
			var ce *eventlog.ConflictError
			switch {
			case tt.conflict != "":
				if !errors.As(err, &ce) || ce.Key != tt.conflict {
					t.Fatalf("WriteAtTail = %v, want a conflict on %q", err, tt.conflict)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("WriteAtTail = %v, want %v", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("WriteAtTail: %v", err)
			case !slices.Equal(ids(w.Events), tt.want):
				t.Fatalf("wrote %v, want %v", ids(w.Events), tt.want)
			}
			if sch != eventlog.SchemeSlot {
				return
			}
			// Whatever happened, the log is dense from 1 and holds what was
			// written.
			p, err := st.List(ctx, run, eventlog.Cursor{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range p.Events {
				if e.Seq != int64(i)+1 || e.ID != slot(int64(i)+1) {
					t.Fatalf("event %d of the log is %s (seq %d), want %s", i, e.ID, e.Seq, slot(int64(i)+1))
				}
			}
			if want := int(next-1) + len(tt.want); len(p.Events) != want {
				t.Fatalf("the log holds %d events, want %d", len(p.Events), want)
			}
		})
	}
}

// cmpScheme is s, or slot when unset.
func cmpScheme(s eventlog.Scheme) eventlog.Scheme {
	if s == "" {
		return eventlog.SchemeSlot
	}
	return s
}

// TestTailRace: appends that race for the same position, all from the
// same stale view of the log, each land once, on positions dense from 1
// and distinct; the losers were bumped (Attempts above 1), and the keys
// they claim stay exclusive. The Store takes no turn of its own for
// WriteAtTail: its writers race at the store's conditions, as writers in
// other processes do.
func TestTailRace(t *testing.T) {
	for _, tt := range []struct {
		name             string
		writers, each    int
		contendedKeyEach bool
	}{
		{name: "two appends race for slot 1", writers: 2, each: 1},
		{name: "two appends race for each of 20 slots", writers: 2, each: 20},
		{name: "eight writers, one contended key a round", writers: 8, each: 6, contendedKeyEach: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			st := open(t, embedded(t), dynamo.Config{TablePerRun: true})
			run := eventlog.Run{ID: "wrun_tailrace", Scheme: eventlog.SchemeSlot}
			if err := st.CreateRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var written []eventlog.Event
			bumped, conflicts := 0, 0
			for round := range tt.each {
				start := make(chan struct{})
				var wg sync.WaitGroup
				for w := range tt.writers {
					wg.Go(func() {
						<-start
						var claims [][]string
						if tt.contendedKeyEach {
							claims = [][]string{{fmt.Sprintf("step/round%d", round)}}
						} else {
							claims = [][]string{{fmt.Sprintf("step/w%d_r%d", w, round)}}
						}
						// Every writer starts from position 1: the stalest view.
						res, err := st.WriteAtTail(ctx, run, tailEvents(run.ID, eventlog.StepCreated), claims, 1)
						mu.Lock()
						defer mu.Unlock()
						var ce *eventlog.ConflictError
						switch {
						case errors.As(err, &ce):
							conflicts++
						case err != nil:
							t.Error(err)
						default:
							written = append(written, res.Events...)
							if res.Attempts > 1 {
								bumped++
							}
						}
					})
				}
				close(start)
				wg.Wait()
			}
			wantWritten := tt.writers * tt.each
			if tt.contendedKeyEach {
				wantWritten = tt.each // one writer a round holds the round's key
				if conflicts != (tt.writers-1)*tt.each {
					t.Errorf("%d conflicts, want %d (every writer but one a round)", conflicts, (tt.writers-1)*tt.each)
				}
			}
			if len(written) != wantWritten {
				t.Fatalf("%d appends landed, want %d", len(written), wantWritten)
			}
			if !tt.contendedKeyEach && bumped == 0 {
				t.Errorf("no append was bumped: the writers, all from slot 1, never raced")
			}
			seen := map[int64]bool{}
			for _, ev := range written {
				if seen[ev.Seq] || ev.ID != eventlog.SlotID(ev.Seq) {
					t.Fatalf("position %d written twice or misnamed (%s)", ev.Seq, ev.ID)
				}
				seen[ev.Seq] = true
			}
			p, err := st.List(ctx, run, eventlog.Cursor{}, 0)
			if err != nil {
				t.Fatalf("the log does not read back dense: %v", err)
			}
			if len(p.Events) != wantWritten {
				t.Fatalf("the log holds %d events, want %d", len(p.Events), wantWritten)
			}
			for i, ev := range p.Events {
				if ev.Seq != int64(i)+1 {
					t.Fatalf("event %d of the log is at position %d: not dense", i, ev.Seq)
				}
			}
		})
	}
}
