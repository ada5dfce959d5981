package cli

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestLineHandler(t *testing.T) {
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want string
	}{
		{"a warning alone", func(l *slog.Logger) { l.Warn("track_commit_timestamp is off") },
			"stormctl: warning: track_commit_timestamp is off\n"},
		{"attrs, a quoted error", func(l *slog.Logger) { l.Warn("timeline", "run", "wrun_1", "err", errors.New("disk full")) },
			"stormctl: warning: timeline: run=wrun_1 err=\"disk full\"\n"},
		{"an error level", func(l *slog.Logger) { l.Error("stopping", "n", 2) },
			"stormctl: error: stopping: n=2\n"},
		{"below the level: nothing", func(l *slog.Logger) { l.Info("chatter", "k", 1) }, ""},
		{"With and WithGroup", func(l *slog.Logger) {
			l.With("world", "vercel").WithGroup("fault").Warn("failed", "kind", "redis-down")
		},
			"stormctl: warning: failed: world=vercel fault.kind=redis-down\n"},
		{"an empty value is quoted", func(l *slog.Logger) { l.Warn("x", "k", "") },
			"stormctl: warning: x: k=\"\"\n"},
		{"a value with = is quoted", func(l *slog.Logger) { l.Warn("x", "cell", "vercel/control/main/guard=count-index") },
			"stormctl: warning: x: cell=\"vercel/control/main/guard=count-index\"\n"},
		{"a line separator is quoted", func(l *slog.Logger) { l.Warn("x", "k", "a\u2028b") },
			"stormctl: warning: x: k=\"a\\u2028b\"\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tc.log(slog.New(newLineHandler(&b, slog.LevelWarn)))
			if got := b.String(); got != tc.want {
				t.Errorf("wrote %q, want %q", got, tc.want)
			}
		})
	}
}
