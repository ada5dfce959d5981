package cli

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// lineHandler is the slog handler of the commands' logger: it writes each
// record at or above its level as one plain line in the commands' own voice,
// "stormctl: warning: <message>: key=value ...", the way every other message
// of stormctl reads, rather than slog's time=... level=... form.
type lineHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	level slog.Level
	attrs []slog.Attr // from WithAttrs, written before the record's own
	group string      // from WithGroup, prefixed to later keys as "group."
}

// newLineHandler returns a lineHandler writing records at level or above to w.
func newLineHandler(w io.Writer, level slog.Level) *lineHandler {
	return &lineHandler{mu: &sync.Mutex{}, w: w, level: level}
}

// Enabled reports whether records at level are written.
func (h *lineHandler) Enabled(_ context.Context, level slog.Level) bool { return level >= h.level }

// Handle writes r as one line.
func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("stormctl: ")
	b.WriteString(severity(r.Level))
	b.WriteString(": ")
	b.WriteString(r.Message)
	sep := ": "
	write := func(a slog.Attr) {
		a.Value = a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			return
		}
		b.WriteString(sep)
		sep = " "
		b.WriteString(a.Key)
		b.WriteByte('=')
		b.WriteString(logValue(a.Value.String()))
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(func(a slog.Attr) bool {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		write(a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs returns a handler that writes attrs on every line.
func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(c.attrs[:len(c.attrs):len(c.attrs)], attrs...)
	if h.group != "" {
		for i := len(h.attrs); i < len(c.attrs); i++ {
			c.attrs[i].Key = h.group + "." + c.attrs[i].Key
		}
	}
	return &c
}

// WithGroup returns a handler that prefixes later keys with name.
func (h *lineHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}

// severity is how a line names its level.
func severity(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "info"
	default:
		return "debug"
	}
}

// logValue quotes a value that is empty or holds a space, a character that
// does not print, a quote or an "=", so that every key=value stays one
// token.
func logValue(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' || r == '=' }) {
		return strconv.Quote(s)
	}
	return s
}

var _ slog.Handler = (*lineHandler)(nil)
