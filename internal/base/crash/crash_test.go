package crash_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/crash"
)

func TestGo(t *testing.T) {
	tests := []struct {
		name      string
		fn        func() error
		wantPanic bool
		wantErr   error
	}{
		{"returns nil", func() error { return nil }, false, nil},
		{"returns an error", func() error { return io.EOF }, false, io.EOF},
		{"panics with a string", func() error { panic("boom") }, true, nil},
		{"panics with an error", func() error { panic(io.ErrUnexpectedEOF) }, true, io.ErrUnexpectedEOF},
		{"nil map write", func() error {
			var m map[string]int
			m["x"] = 1
			return nil
		}, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := crash.Go(tc.fn)()
			var ce *crash.Error
			if got := errors.As(err, &ce); got != tc.wantPanic {
				t.Fatalf("err = %v: a panic: %v, want %v", err, got, tc.wantPanic)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want one wrapping %v", err, tc.wantErr)
			}
			if tc.wantPanic && (!strings.HasPrefix(err.Error(), "panic: ") || !strings.Contains(string(ce.Stack), "crash_test.go")) {
				t.Errorf("err = %q, stack:\n%s\nwant \"panic: ...\" and a stack naming this file", err, ce.Stack)
			}
		})
	}
}
