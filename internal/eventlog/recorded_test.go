package eventlog

import (
	"errors"
	"testing"
)

// TestRecordedErr: an error rebuilt from its recorded class and text says
// the recorded text, is put back in its class by Classify, and carries the
// positions a fenced rejection, a hole or a sealed slot named.
func TestRecordedErr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rec  Recorded
		want error // what errors.Is finds; nil for none
	}{
		{Recorded{}, nil},
		{Recorded{Class: "fenced", Text: "run r: fenced append rejected: expected seq 3, log at 5", Expected: 3, Actual: 5}, ErrFenced},
		{Recorded{Class: "conflict", Text: "key step_created/s already taken"}, ErrConflict},
		{Recorded{Class: "gap", Text: "run r: gap: want seq 4, got 6"}, ErrGap},
		{Recorded{Class: "duplicate", Text: "two at 4"}, ErrDuplicate},
		{Recorded{Class: "hole", Text: "slot 4 is empty below 6", Slot: 4, Above: 6}, ErrHole},
		{Recorded{Class: "sealed", Text: "slot 4 sealed", Slot: 4}, ErrSealed},
		{Recorded{Class: "refused", Text: "HookNotFoundError"}, ErrRefused},
		{Recorded{Class: "unavailable", Text: "connection refused"}, ErrUnavailable},
		{Recorded{Class: "no_run", Text: "no run r"}, ErrNoRun},
		{Recorded{Class: "other", Text: "context canceled"}, nil},
	} {
		t.Run(tc.rec.Class, func(t *testing.T) {
			t.Parallel()
			err := tc.rec.Err()
			if tc.rec.Class == "" {
				if err != nil {
					t.Fatalf("no class gave %v, want no error", err)
				}
				return
			}
			if err == nil || err.Error() != tc.rec.Text {
				t.Fatalf("Err() = %v, want the text %q", err, tc.rec.Text)
			}
			if got := Classify(err); got != tc.rec.Class {
				t.Errorf("Classify = %q, want %q", got, tc.rec.Class)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.want)
			}
			var fe *FencedError
			if errors.As(err, &fe) && (fe.Expected != tc.rec.Expected || fe.Actual != tc.rec.Actual) {
				t.Errorf("fenced at %d/%d, want %d/%d", fe.Expected, fe.Actual, tc.rec.Expected, tc.rec.Actual)
			}
			var he *HoleError
			if errors.As(err, &he) && (he.Slot != tc.rec.Slot || he.Above != tc.rec.Above) {
				t.Errorf("hole at %d below %d, want %d below %d", he.Slot, he.Above, tc.rec.Slot, tc.rec.Above)
			}
		})
	}
}

// TestCursorText: a cursor names the start, a position or an event id.
func TestCursorText(t *testing.T) {
	t.Parallel()
	for c, want := range map[Cursor]string{{}: "start", {Seq: 41}: "seq 41", {ID: "evnt_1", Seq: 3}: "seq 3", {ID: "evnt_1"}: "evnt_1"} {
		if got := c.Text(); got != want {
			t.Errorf("%+v.Text() = %q, want %q", c, got, want)
		}
	}
}
