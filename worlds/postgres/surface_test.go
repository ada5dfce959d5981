package postgres_test

import (
	"strings"
	"testing"

	"github.com/stormctl/stormctl/worlds/postgres"
)

// TestValidPGURL: what pgx reads is taken, a "://" inside keyword=value
// settings included; a URL of another scheme is refused by its scheme.
func TestValidPGURL(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string // "" when accepted
	}{
		{"", ""},
		{"postgres://u:p@127.0.0.1:5432/app", ""},
		{"postgresql://u@db/app?sslmode=disable", ""},
		{"host=/var/run/postgresql dbname=x", ""},
		{"host=localhost password=ab://cd", ""},
		{"host=localhost password='a b://c'", ""},
		{"mysql://u:p@db:3306/app", `--pg-url: scheme "mysql": want postgres://`},
		{"POSTGRES://u@db/app", `--pg-url: scheme "POSTGRES": want postgres://`},
		{"postgres://u:p@db:notaport/app", "--pg-url: cannot parse `postgres://u:xxxxx@db:notaport/app`: invalid port"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			err := postgres.ValidURL("--pg-url", tc.in)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("postgres.ValidURL(%q) = %v, want it accepted", tc.in, err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Fatalf("postgres.ValidURL(%q) = %v, want an error starting %q", tc.in, err, tc.wantErr)
			}
		})
	}
}
