package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/internal/eventlog"
)

// TestString: every secret of every form is masked, and what is not a
// secret stays as it was.
func TestString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"postgres://u@db:5432/app", "postgres://u@db:5432/app"},
		{"postgres://u:p@db:5432/app", "postgres://u:xxxxx@db:5432/app"},
		{"postgres://admin:Hunter2@Secret:x@db:5432/app", "postgres://admin:xxxxx@db:5432/app"},
		{"postgres://admin:Hunter2@Secret@db:5432/app", "postgres://admin:xxxxx@db:5432/app"},
		{"postgres://u:pa/ss?w#rd@db/app", "postgres://u:xxxxx@db/app"},
		{"postgresql://u:p@db/app?sslmode=require&password=Qw3rty&sslpassword=k3y&sslkey=/home/u/.pg/k.key&application_name=x",
			"postgresql://u:xxxxx@db/app?sslmode=require&password=xxxxx&sslpassword=xxxxx&sslkey=xxxxx&application_name=x"},
		{"postgres://db/app?pass%77ord=Qw3rty", "postgres://db/app?pass%77ord=xxxxx"},
		{"host=db user=u password=Hunter2 dbname=app", "host=db user=u password=xxxxx dbname=app"},
		{"host=db password = 'Hun ter\\'2' sslpassword=k3y sslkey=/k.key port=5432", "host=db password = xxxxx sslpassword=xxxxx sslkey=xxxxx port=5432"},
		{"host=db password='never closed", "host=db password=xxxxx"},
		{"host=localhost password=ab://cd@x", "host=localhost password=xxxxx"},
		{"redis://:s3cret@cache:6379/0", "redis://:xxxxx@cache:6379/0"},
		{"rediss://u:s3c@ret@cache:6380", "rediss://u:xxxxx@cache:6380"},
		{"redis://s3cret@cache:6379", "redis://xxxxx@cache:6379"},
		{"https://ghp_T0ken@github.com/o/r", "https://xxxxx@github.com/o/r"},
		{"https://u:p@ingest.example.com/x?token=abc&x=1", "https://u:xxxxx@ingest.example.com/x?token=xxxxx&x=1"},
		{"http://ingest:8080/?access_token=abc;X-Amz-Signature=def#frag", "http://ingest:8080/?access_token=xxxxx;X-Amz-Signature=xxxxx#frag"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
	}
	for _, tc := range tests {
		if got := redact.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSetting: a setting whose name says secret is one whole; any other
// is masked as String masks it.
func TestSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key, value, want string
		secret           bool
	}{
		{"WORKFLOW_REDIS_URI", "redis://127.0.0.1:6379", "redis://127.0.0.1:6379", false},
		{"WORKFLOW_REDIS_URI", "redis://:s3cret@cache:6379", "redis://:xxxxx@cache:6379", true},
		{"WORKFLOW_POSTGRES_URL", "postgres://u:p@db/app", "postgres://u:xxxxx@db/app", true},
		{"MY_WORLD_API_KEY", "k-123", "", true},
		{"REDIS_PASSWORD", "Hunter2", "", true},
		{"REDIS_PASSWORD", "", "", false},
		{"DEBUG", "1", "1", false},
	} {
		got, secret := redact.Setting(tc.key, tc.value)
		if got != tc.want || secret != tc.secret {
			t.Errorf("Setting(%q, %q) = %q, %v; want %q, %v", tc.key, tc.value, got, secret, tc.want, tc.secret)
		}
	}
}

// TestText: a library's text that quotes an endpoint its own way, or a
// piece of its password, has the secrets masked.
func TestText(t *testing.T) {
	t.Parallel()
	const dsn = "postgres://admin:Hunter2@Secret:x@db:5432/app"
	tests := []struct{ text, want string }{
		{`parse "postgres://admin:Hunter2@Secret:x@db:5432/app": invalid port ":x@db:5432" after host`,
			`parse "postgres://admin:xxxxx@db:5432/app": invalid port ":x@db:5432" after host`},
		{"hostname resolving error: lookup Secret on 127.0.0.53:53: no such host", "hostname resolving error: lookup xxxxx on 127.0.0.53:53: no such host"},
		{"user=admin password=Hunter2", "user=admin password=xxxxx"},
		{"Hunter2%40Secret%3Ax", "xxxxx"},
	}
	for _, tc := range tests {
		if got := redact.Text(tc.text, dsn); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestServer: a message names the server, never the password, wherever
// the password's text also occurs in the URL.
func TestServer(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, want, secret string }{
		{"postgres://u:p@127.0.0.1:1/db", "127.0.0.1:1/db", ":p@"},
		{"postgres://app:s3cret@db.example:5433/app?sslmode=disable", "db.example:5433/app", "s3cret"},
		// A password that is also the database's name is masked there too.
		{"postgres://postgres:postgres@localhost/postgres", "localhost:5432/xxxxx", "postgres@"},
		{"host=h port=6000 user=u password=pw dbname=d", "h:6000/d", "pw"},
		{"postgres://admin:Hunter2@Secret@db:5432/app", "xxxxx@db:5432/app", "Secret"},
		{"postgres://%zz", "the server", "%zz"},
	}
	for _, tc := range tests {
		got := redact.Server(tc.url)
		if got != tc.want || strings.Contains(got, tc.secret) {
			t.Errorf("Server(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

// TestWrap: a wrapped error prints masked and still matches what it wraps.
func TestWrap(t *testing.T) {
	t.Parallel()
	const dsn = "postgres://u:Hunter2@db/app"
	err := redact.Wrap(eventlog.Unavailable("connect to postgres://u:Hunter2@db/app", errors.New("refused")), dsn)
	if !errors.Is(err, eventlog.ErrUnavailable) || strings.Contains(err.Error(), "Hunter2") {
		t.Errorf("Wrap = %v (is unavailable: %v), want it masked and matching", err, errors.Is(err, eventlog.ErrUnavailable))
	}
	if redact.Wrap(nil, dsn) != nil {
		t.Error("Wrap(nil) is not nil")
	}
}

// Forms are the endpoint forms a password goes into: %[1]s is the
// password as the form carries it.
var forms = []struct {
	name   string
	format string
	encode func(string) string
}{
	{"postgres userinfo, raw", "postgres://admin:%s@db:5432/app?sslmode=disable", raw},
	{"postgres userinfo, escaped", "postgresql://admin:%s@db/app", escapePassword},
	{"postgres query password", "postgres://admin@db:5432/app?sslmode=require&password=%s&application_name=storm", url.QueryEscape},
	{"postgres query sslpassword", "postgres://admin@db/app?sslpassword=%s", url.QueryEscape},
	{"postgres query sslkey", "postgres://db/app?sslkey=%s&sslmode=verify-full", url.QueryEscape},
	{"keyword/value quoted", "host=db port=5432 user=admin password=%s dbname=app", quoteKV},
	{"keyword/value sslpassword", "host=db sslpassword = %s sslmode=require", quoteKV},
	{"redis userinfo, raw", "redis://default:%s@cache:6379/0", raw},
	{"redis password only", "rediss://:%s@cache:6380", raw},
	{"http userinfo", "https://deploy:%s@ingest.example.com/api", escapePassword},
	{"http token userinfo", "https://%s@ingest.example.com/api", func(s string) string { return url.User(s).String() }},
	{"http query token", "https://ingest.example.com/api?team=a&token=%s", url.QueryEscape},
}

func raw(s string) string { return s }

// escapePassword escapes a password for a URL's userinfo.
func escapePassword(s string) string {
	return strings.TrimPrefix(url.UserPassword("u", s).String(), "u:")
}

// quoteKV quotes a keyword value as libpq reads it.
func quoteKV(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// leaks reports the piece of password (of 4 bytes or more, between URL
// delimiters, and not also a piece of the form's own text) that out shows,
// or "".
func leaks(out, password, format string) string {
	if len(password) >= 4 && strings.Contains(out, password) && !strings.Contains(format, password) {
		return password
	}
	for _, p := range strings.FieldsFunc(password, func(r rune) bool { return strings.ContainsRune("@:/?#&=;, '\"\\%[]", r) }) {
		if len(p) >= 4 && strings.Contains(out, p) && !strings.Contains(format, p) && !strings.Contains(redact.Mask, p) {
			return p
		}
	}
	return ""
}

// FuzzString: whatever the password, in every form, String's output never
// shows it, nor any piece of it a parser may quote apart (the form's own
// text aside), and Text masks it in a text quoting the endpoint in Go's
// way or URL-escaped.
func FuzzString(f *testing.F) {
	for _, s := range []string{"Hunter2", "Hunter2@Secret:x", "pa/ss?w#rd", "a b'c\\d", "p&token=q", "xx@yy@zz", "é@ü:ß/∂", "%41%42%43%44"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, password string) {
		for _, form := range forms {
			if isRaw(form.encode) && strings.ContainsAny(password, " \t\r\n\x00") {
				continue // a raw form cannot carry whitespace; the escaped ones do
			}
			enc := form.encode(password)
			dsn := fmt.Sprintf(form.format, enc)
			if p := leaks(redact.String(dsn), password, form.format); p != "" {
				t.Fatalf("%s: String(%q) = %q shows %q", form.name, dsn, redact.String(dsn), p)
			}
			for _, text := range []string{fmt.Sprintf("parse %q: invalid", dsn), "dial " + dsn + ": refused", url.QueryEscape(dsn)} {
				if p := leaks(redact.Text(text, dsn), password, form.format); p != "" {
					t.Fatalf("%s: Text(%q) = %q shows %q", form.name, text, redact.Text(text, dsn), p)
				}
			}
		}
	})
}

func isRaw(enc func(string) string) bool { return enc("a b") == "a b" }
