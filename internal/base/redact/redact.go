// Package redact hides the secrets of an endpoint (a URL of any scheme, a
// PostgreSQL keyword/value connection string) in what stormctl prints:
// messages end up in CI logs, a password must not. String masks an
// endpoint; Text masks an endpoint's secrets in any text (a library's
// error quoting the endpoint in its own way); Error does the same to an
// error, keeping it matchable.
package redact

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Mask replaces each secret.
const Mask = "xxxxx"

// span is a secret's place in an endpoint: s[start:end].
type span struct{ start, end int }

// String returns s with every secret it holds replaced by Mask. A URL
// (scheme://...): the password of its userinfo, taken up to the last "@"
// (a password may hold "@", "/", "?" or ":" unescaped, and parsers
// disagree on where it ends: both readings are masked), the whole userinfo
// of a non-postgres URL without a password (a token, as in
// https://TOKEN@host), and the value of every query parameter whose name
// says secret (password, sslpassword, sslkey, token, secret, key, sig,
// auth, credential, ...). A keyword/value connection string: the value of
// every such keyword, quoted or not. It over-masks rather than show a
// secret where the text is ambiguous.
func String(s string) string {
	spans := secrets(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		b.WriteString(s[at:sp.start])
		b.WriteString(Mask)
		at = sp.end
	}
	b.WriteString(s[at:])
	return b.String()
}

// Secrets returns the secrets String masks in s, in order.
func Secrets(s string) []string {
	var out []string
	for _, sp := range secrets(s) {
		out = append(out, s[sp.start:sp.end])
	}
	return out
}

// pieceMin is the shortest piece of a secret Text masks on its own: a
// library that split the endpoint its own way may quote a piece of a
// password (pgx reads userinfo up to the first "@", and names the rest of
// the password as the host).
const pieceMin = 3

// delimiters split a secret into the pieces a parser may quote apart.
const delimiters = "@:/?#&=;, '\"\\%[]"

// Text returns text with every secret of the endpoints masked wherever it
// occurs: as it is, quoted the way Go quotes (%q) or URL-escaped, and each
// piece of it between URL delimiters. A secret or piece shorter than
// pieceMin bytes is left alone: masking every "p" of a text would make it
// unreadable and hide little (String masks such a secret in the endpoint
// itself).
func Text(text string, endpoints ...string) string {
	var olds []string
	add := func(x string) {
		for _, f := range []string{x, url.QueryEscape(x), url.PathEscape(x), strings.Trim(strconv.Quote(x), `"`)} {
			if len(f) >= pieceMin {
				olds = append(olds, f)
			}
		}
	}
	for _, e := range endpoints {
		for _, sec := range Secrets(e) {
			add(sec)
			for _, p := range strings.FieldsFunc(sec, func(r rune) bool { return strings.ContainsRune(delimiters, r) }) {
				add(p)
			}
		}
	}
	// Longest first, so that a secret is masked whole before its pieces.
	slices.SortStableFunc(olds, func(a, b string) int { return len(b) - len(a) })
	for _, old := range olds {
		text = strings.ReplaceAll(text, old, Mask)
	}
	return text
}

// Error is an error whose text has an endpoint's secrets masked (Text); it
// unwraps to the error it masks, so errors.Is and errors.As still see it.
type Error struct {
	Err       error
	Endpoints []string
}

// Wrap returns err with the endpoints' secrets masked in its text (nil
// for nil).
func Wrap(err error, endpoints ...string) error {
	if err == nil {
		return nil
	}
	return &Error{Err: err, Endpoints: endpoints}
}

func (e *Error) Error() string { return Text(e.Err.Error(), e.Endpoints...) }

// Unwrap returns the masked error.
func (e *Error) Unwrap() error { return e.Err }

// secrets finds the secret spans of s, sorted and merged.
func secrets(s string) []span {
	var spans []span
	if isURL(s) {
		spans = urlSecrets(s)
	} else {
		spans = keywordSecrets(s)
	}
	return merge(spans)
}

// isURL reports whether s is a URL rather than keyword/value settings: a
// "://" after a scheme that holds no "=" or space (a keyword value may
// hold "://").
func isURL(s string) bool {
	i := strings.Index(s, "://")
	return i > 0 && !strings.ContainsAny(s[:i], "= \t\r\n")
}

// urlSecrets are the secret spans of a URL.
func urlSecrets(s string) []span {
	i := strings.Index(s, "://")
	scheme := strings.ToLower(s[:i])
	base := i + 3
	rest := s[base:]
	postgres := scheme == "postgres" || scheme == "postgresql"
	var spans []span
	userinfo := func(end int) { // rest[:end] is a userinfo
		if user, _, ok := strings.Cut(rest[:end], ":"); ok {
			spans = append(spans, span{base + len(user) + 1, base + end})
		} else if !postgres && end > 0 {
			spans = append(spans, span{base, base + end})
		}
	}
	// The userinfo as a URL parser reads it: up to the last "@" of the
	// authority, which ends at the first "/", "?" or "#".
	auth := len(rest)
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		auth = j
	}
	if j := strings.LastIndex(rest[:auth], "@"); j >= 0 {
		userinfo(j)
	}
	// And as a person may have typed it: a password holding "/", "?" or
	// "#" unescaped ends at the last "@" of all.
	if j := strings.LastIndex(rest, "@"); j >= auth {
		userinfo(j)
	}
	// Query parameters (and ";"-separated ones) whose name says secret.
	for j := 0; j < len(rest); j++ {
		if c := rest[j]; c != '?' && c != '&' && c != ';' {
			continue
		}
		k := j + 1
		eq := strings.IndexByte(rest[k:], '=')
		if eq < 0 {
			break
		}
		name := rest[k : k+eq]
		if strings.ContainsAny(name, "&;?#") {
			continue
		}
		v := k + eq + 1
		end := len(rest)
		if e := strings.IndexAny(rest[v:], "&;#"); e >= 0 {
			end = v + e
		}
		if secretName(name) && end > v {
			spans = append(spans, span{base + v, base + end})
		}
	}
	return spans
}

// keywordSecrets are the secret spans of keyword/value settings (libpq's
// syntax: key = value, a value single-quoted or not, backslash escaping
// the next byte in both).
func keywordSecrets(s string) []span {
	var spans []span
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' }
	i := 0
	for i < len(s) {
		for i < len(s) && space(s[i]) {
			i++
		}
		k := i
		for i < len(s) && s[i] != '=' && !space(s[i]) {
			i++
		}
		key := s[k:i]
		for i < len(s) && space(s[i]) {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			continue // no "=": not a setting; go on after the word
		}
		i++
		for i < len(s) && space(s[i]) {
			i++
		}
		v := i
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i+1, len(s)) // the closing quote, if any
		} else {
			for i < len(s) && !space(s[i]) {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i, len(s))
		}
		if secretName(key) && i > v {
			spans = append(spans, span{v, i})
		}
	}
	return spans
}

// Setting returns the value of setting key (an environment variable
// given as KEY=VALUE) as it may be shown or stored, and whether a secret
// was taken out of it: "" when the key's name says secret (PASSWORD,
// TOKEN, API_KEY, ...: the whole value is one), else the value with what
// String masks in it masked.
func Setting(key, value string) (shown string, secret bool) {
	if secretName(key) {
		return "", value != ""
	}
	shown = String(value)
	return shown, shown != value
}

// secretName reports whether a setting or query parameter of this name
// holds a secret (its percent-escapes decoded, case ignored).
func secretName(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	name = strings.ToLower(name)
	for _, w := range []string{"pass", "pwd", "token", "secret", "key", "sig", "auth", "credential", "session"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// merge sorts spans and merges the overlapping ones.
func merge(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var out []span
	for _, sp := range spans {
		if n := len(out); n > 0 && sp.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// Server names the server of a PostgreSQL connection string for messages,
// host:port/database as pgx reads it, with any piece of a secret pgx took
// for the host or database masked (pgx ends a URL's userinfo at its first
// "@"); "the server" when pgx cannot read it.
func Server(s string) string {
	cfg, err := pgx.ParseConfig(s)
	if err != nil {
		return "the server"
	}
	return Text(fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database), s)
}
