package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want error
	}{
		{"elapses", context.Background(), time.Millisecond, nil},
		{"zero returns at once", context.Background(), 0, nil},
		{"negative returns at once", context.Background(), -time.Second, nil},
		{"ended context wins over a long wait", ended, time.Hour, context.Canceled},
		{"ended context wins over no wait", ended, 0, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := Sleep(tc.ctx, tc.d); !errors.Is(err, tc.want) {
				t.Errorf("Sleep(%s) = %v, want %v", tc.d, err, tc.want)
			}
		})
	}
}
