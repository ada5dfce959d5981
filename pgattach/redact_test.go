package pgattach

import (
	"strings"
	"testing"
)

// TestRedact: a message names the server, never the password, wherever the
// password's text also occurs in the URL.
func TestRedact(t *testing.T) {
	tests := []struct{ url, want, secret string }{
		{"postgres://u:p@127.0.0.1:1/db", "127.0.0.1:1/db", ":p@"},
		{"postgres://app:s3cret@db.example:5433/app?sslmode=disable", "db.example:5433/app", "s3cret"},
		{"postgres://postgres:postgres@localhost/postgres", "localhost:5432/postgres", "postgres@"},
		{"host=h port=6000 user=u password=pw dbname=d", "h:6000/d", "pw"},
		{"postgres://%zz", "the server", "%zz"},
	}
	for _, tc := range tests {
		got := redact(tc.url)
		if got != tc.want || strings.Contains(got, tc.secret) {
			t.Errorf("redact(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}
