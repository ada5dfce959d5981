package builtin_test

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/stormctl/stormctl/internal/base/redact"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/builtin"
	"github.com/stormctl/stormctl/worlds/postgres"
)

// endpointFields are the endpoint flags ValidateEndpoints checks, in its
// order (--devkit-dir aside: it is checked on disk).
var endpointFields = []struct{ flag string }{{"--pg-url"}, {"--ingest-url"}, {"--dynamo-endpoint"}, {"--redis-url"}}

// set sets the value of flag (with its dashes) in v.
func set(v worlds.Values, flag, value string) { v[strings.TrimPrefix(flag, "--")] = value }

// validate is what the built-in worlds' ValidateEndpoints says of v.
func validate(v worlds.Values) error {
	reg, stop := builtin.Registry(worlds.Setup{}, nil)
	defer func() { _ = stop() }()
	return reg.ValidateEndpoints(v)
}

// FuzzWorldEndpoints: ValidateEndpoints never panics; whatever it accepts, the
// clients that open the endpoints accept too (--pg-url: pgx.ParseConfig;
// --redis-url: redis.ParseURL; --ingest-url and --dynamo-endpoint: an
// http(s) URL with a host name); what it refuses, it refuses with an error
// that starts with the first flag at fault. And --pg-url takes every
// connection string pgx reads, as its help says, but a URL of another
// scheme (which pgx reads as a keyword holding "://"), refused by its
// scheme: the text before "://", never keyword=value settings (a password
// among them).
func FuzzWorldEndpoints(f *testing.F) {
	for _, seed := range [][4]string{
		{"", "", "", ""},
		{"postgres://u:p@127.0.0.1:5432/app", "http://127.0.0.1:8080", "http://localhost:8000", "redis://127.0.0.1:6379/0"},
		{"postgresql://u@db/app?sslmode=disable", "https://ingest.example.com", "https://dynamodb.us-east-1.amazonaws.com", "rediss://u:p@cache:6380"},
		{"host=localhost port=5432 user=u dbname=app", "http://[::1]:8080", "", "redis://:secret@cache"},
		{"postgres://u:p@db:notaport/app", "ftp://ingest", "dynamo:8000", "http://cache:6379"},
		{"mysql://u:p@db:3306/app", "http://", "https://", "redis://cache:notaport"},
		// Found by this target: ingest and dynamo URLs with a port and no
		// host name were accepted; a "://" inside a keyword setting was
		// refused as a scheme.
		{"POSTGRES://u@db/app", "http://:8080", "http://@:80/", "redis://cache/notadb"},
		{"host=localhost password=ab://cd", "HTTP://ingest", "http:// ", "unix:///tmp/redis.sock"},
		{"https://:443", "https://:443", "", ""},
		// pgx reads "0://=" as the setting "0://" = "": refused, by its
		// "scheme" (no setting a person writes has "://" in its name).
		{"0://=", "", "", ""},
		{"host=", "http://in gest", "http://%zz", "redis://u:p@[::1]:6379/15?dial_timeout=1s"},
		{"://", "//ingest:80", "127.0.0.1:8000", "redis://"},
		// Secrets in every form: an @ in a password, query parameters,
		// keyword/value settings, tokens.
		{"postgres://admin:Hunter2@Secret:x@db:5432/app", "https://tok3n@ingest", "http://u:p@@dynamo:8000", "redis://:s3c@ret@cache:bad"},
		{"host=db port=x password='a b' sslpassword=s3cret", "ftp://ingest?token=s3cret", "", "rediss://u:s3c/ret@cache:6380/x"},
		{"postgres://u@db:x/app?password=s3cret&sslkey=/k.key", "", "", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, pg, ingest, dynamo, redisURL string) {
		values := []string{pg, ingest, dynamo, redisURL}
		ep := worlds.Values{}
		firstBad := ""
		for i, fl := range endpointFields {
			set(ep, fl.flag, values[i])
			one := worlds.Values{}
			set(one, fl.flag, values[i])
			err := validate(one)
			if err != nil && !strings.HasPrefix(err.Error(), fl.flag) {
				t.Fatalf("%s %q: error %q does not start with the flag", fl.flag, values[i], err)
			}
			if err != nil && firstBad == "" {
				firstBad = fl.flag
			}
		}
		if err := validate(ep); err != nil {
			if firstBad == "" || !strings.HasPrefix(err.Error(), firstBad) {
				t.Fatalf("Validate(%+v) = %q, want an error from %s, the first flag at fault", ep, err, firstBad)
			}
		} else if firstBad != "" {
			t.Fatalf("Validate(%+v) accepted it, but %s alone is refused", ep, firstBad)
		}

		// An error quotes a value with its secrets masked: none it masks
		// shows (unless the value shows it elsewhere too).
		for i, fl := range endpointFields {
			one := worlds.Values{}
			set(one, fl.flag, values[i])
			err := validate(one)
			if err == nil {
				continue
			}
			for _, sec := range redact.Secrets(values[i]) {
				if len(sec) >= 4 && strings.Contains(err.Error(), sec) && !strings.Contains(redact.String(values[i]), sec) {
					t.Fatalf("%s %q: error %q shows the secret %q", fl.flag, values[i], err, sec)
				}
			}
		}

		_, pgxErr := pgx.ParseConfig(pg)
		switch err := postgres.ValidURL("--pg-url", pg); {
		case err == nil && pg != "" && pgxErr != nil:
			t.Fatalf("--pg-url %q accepted, but pgx.ParseConfig refuses it: %v", pg, pgxErr)
		case err != nil && pgxErr == nil:
			scheme, _, _ := strings.Cut(pg, "://")
			if !strings.HasPrefix(err.Error(), "--pg-url: scheme "+strconv.Quote(scheme)+":") {
				t.Fatalf("--pg-url %q refused (%v), but pgx reads it and it is no URL of another scheme", pg, err)
			}
		}
		if err := postgres.ValidURL("--pg-url", pg); err != nil && strings.HasPrefix(err.Error(), "--pg-url: scheme ") {
			scheme, _, _ := strings.Cut(pg, "://")
			if strings.Contains(scheme, "=") {
				t.Fatalf("--pg-url %q refused as a URL of scheme %q, which holds keyword=value settings: %v", pg, scheme, err)
			}
		}
		if err := validate(worlds.Values{"redis-url": redisURL}); err == nil && redisURL != "" {
			if _, perr := redis.ParseURL(redisURL); perr != nil {
				t.Fatalf("--redis-url %q accepted, but redis.ParseURL refuses it: %v", redisURL, perr)
			}
		}
		for i, fl := range endpointFields[1:3] {
			v := values[i+1]
			one := worlds.Values{}
			set(one, fl.flag, v)
			if validate(one) != nil || v == "" {
				continue
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
				t.Fatalf("%s %q accepted, but it is no http(s) URL with a host name (%v)", fl.flag, v, err)
			}
		}
	})
}

// TestEndpointErrorsHidePasswords: a refused endpoint flag is quoted in
// its error with the password replaced, for errors end up in CI logs.
func TestEndpointErrorsHidePasswords(t *testing.T) {
	tests := []struct {
		name   string
		ep     worlds.Values
		secret string
	}{
		{"redis, a bad port", worlds.Values{"redis-url": "redis://u:s3cretpw@h:bad"}, "s3cretpw"},
		{"redis, a bad database", worlds.Values{"redis-url": "redis://u:s3cretpw@h:6379/xx"}, "s3cretpw"},
		{"redis, an @ in the password", worlds.Values{"redis-url": "redis://u:s3c@retpw@h:bad"}, "retpw"},
		{"ingest, another scheme", worlds.Values{"ingest-url": "ftp://u:s3cretpw@ingest"}, "s3cretpw"},
		{"dynamo, no host name", worlds.Values{"dynamo-endpoint": "http://u:s3cretpw@:8000"}, "s3cretpw"},
		{"postgres, a bad port", worlds.Values{"pg-url": "postgres://u:s3cretpw@db:notaport/app"}, "s3cretpw"},
		{"postgres, an @ in the password", worlds.Values{"pg-url": "postgres://admin:Hunter2@Secret:x@db:5432/app"}, "Secret"},
		{"postgres, a / in the password", worlds.Values{"pg-url": "postgres://admin:Hun/ter2@db:5432/app"}, "ter2"},
		{"postgres, password in the query", worlds.Values{"pg-url": "postgres://admin@db:notaport/app?password=s3cretpw"}, "s3cretpw"},
		{"postgres, sslpassword in the query", worlds.Values{"pg-url": "postgres://admin@db:5432/app?sslpassword=s3cretpw&sslmode=bogus"}, "s3cretpw"},
		{"postgres keyword/value, a bad port", worlds.Values{"pg-url": "host=db port=x user=u password=s3cretpw"}, "s3cretpw"},
		{"postgres keyword/value, quoted", worlds.Values{"pg-url": "host=db port=x password='s3c ret\\'pw' sslpassword=an0ther"}, "an0ther"},
		{"redis, a password alone", worlds.Values{"redis-url": "redis://:s3cretpw@h:bad"}, "s3cretpw"},
		{"ingest, a token", worlds.Values{"ingest-url": "ftp://ingest/?token=s3cretpw"}, "s3cretpw"},
		{"ingest, a token as userinfo", worlds.Values{"ingest-url": "ftp://s3cretpw@ingest"}, "s3cretpw"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(tc.ep)
			if err == nil {
				t.Fatalf("ValidateEndpoints(%+v) accepted it", tc.ep)
			}
			if strings.Contains(err.Error(), tc.secret) {
				t.Errorf("error %q shows the password", err)
			}
			if !strings.HasPrefix(err.Error(), "--") {
				t.Errorf("error %q does not start with its flag", err)
			}
		})
	}
}

// FuzzEndpointErrorsHidePasswords: whatever the password, in every form
// each endpoint flag takes (with something else wrong, so that Validate
// refuses the value and quotes it), the error never shows the password nor
// a piece of it (4 bytes or more between URL delimiters) the form's own
// text does not hold.
func FuzzEndpointErrorsHidePasswords(f *testing.F) {
	for _, s := range []string{"Hunter2", "Hunter2@Secret:x", "pa/ss?w#rd", "a b'c\\d", "p&token=q", "xx@yy@zz:99", "%41%42%43%44"} {
		f.Add(s)
	}
	userinfo := func(p string) string { return strings.TrimPrefix(url.UserPassword("u", p).String(), "u:") }
	quoted := func(p string) string { return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(p) + "'" }
	raw := func(p string) string { return p }
	forms := []struct {
		flag   string
		format string
		encode func(string) string
	}{
		{"--pg-url", "postgres://admin:%s@db:notaport/app", raw},
		{"--pg-url", "postgres://admin:%s@db:notaport/app", userinfo},
		{"--pg-url", "postgresql://admin@db:notaport/app?sslmode=require&password=%s", url.QueryEscape},
		{"--pg-url", "postgres://admin@db:5432/app?sslpassword=%s&sslmode=bogus", url.QueryEscape},
		{"--pg-url", "postgres://admin@db:5432/app?sslkey=%s&sslmode=bogus", url.QueryEscape},
		{"--pg-url", "host=db port=notaport user=admin password=%s dbname=app", quoted},
		{"--pg-url", "host=db port=notaport sslpassword=%s", quoted},
		{"--redis-url", "redis://default:%s@cache:notaport/0", raw},
		{"--redis-url", "rediss://:%s@cache:6380/notadb", userinfo},
		{"--ingest-url", "ftp://deploy:%s@ingest", userinfo},
		{"--ingest-url", "ftp://ingest/?token=%s", url.QueryEscape},
		{"--dynamo-endpoint", "http://%s@:8000", func(p string) string { return url.User(p).String() }},
	}
	f.Fuzz(func(t *testing.T, password string) {
		for _, form := range forms {
			if form.encode("a b") == "a b" && strings.ContainsAny(password, " \t\r\n\x00") {
				continue // a raw form cannot carry whitespace; the escaped ones do
			}
			validate := func(password string) (string, error) {
				v := fmt.Sprintf(form.format, form.encode(password))
				ep := worlds.Values{}
				for _, fl := range endpointFields {
					if fl.flag == form.flag {
						set(ep, fl.flag, v)
					}
				}
				return v, validate(ep)
			}
			v, err := validate(password)
			if err == nil {
				continue // the password made the value valid (say, a port of its own)
			}
			msg := err.Error()
			// The message's own words ("password") are no leak.
			_, refErr := validate("Q")
			ref := ""
			if refErr != nil {
				ref = refErr.Error()
			}
			pieces := append([]string{password}, strings.FieldsFunc(password, func(r rune) bool { return strings.ContainsRune("@:/?#&=;, '\"\\%[]", r) })...)
			for _, p := range pieces {
				if len(p) >= 4 && strings.Contains(msg, p) && !strings.Contains(form.format, p) && !strings.Contains(ref, p) && !strings.Contains(redact.Mask, p) {
					t.Fatalf("%s %q: error %q shows %q of the password %q", form.flag, v, msg, p, password)
				}
			}
		}
	})
}
