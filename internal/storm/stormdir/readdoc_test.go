package stormdir_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
)

// picky refuses every value but "ok", as a field with its own
// UnmarshalText does (a shard "4/3").
type picky string

func (p *picky) UnmarshalText(b []byte) error {
	if string(b) != "ok" {
		return errors.New("not ok")
	}
	*p = picky(b)
	return nil
}

// TestReadDocumentSaysWhy: a document's error tells a cut-off or non-JSON
// file, a value of the wrong type and a value a field refuses apart.
func TestReadDocumentSaysWhy(t *testing.T) {
	tests := []struct {
		name, doc, want, notWant string
	}{
		{"cut off", "{\"schema\": 1,\n\"v\": \"o", "doc.json:2: malformed (cut off or not JSON)", ""},
		{"wrong type", "{\"schema\": 1,\n\"n\": \"x\"}", "doc.json:2: malformed (a value of the wrong type)", "cut off"},
		{"a refused value", "{\"schema\": 1,\n\"v\": \"4/3\"}", "malformed (a value this build refuses): not ok", "cut off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "doc.json")
			if err := os.WriteFile(path, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			var v struct {
				Schema int   `json:"schema"`
				V      picky `json:"v"`
				N      int   `json:"n"`
			}
			err := stormdir.ReadDocument(path, &v, func() int { return v.Schema })
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.notWant != "" && strings.Contains(err.Error(), tc.notWant)) {
				t.Errorf("stormdir.ReadDocument = %v, want an error with %q and without %q", err, tc.want, tc.notWant)
			}
		})
	}
}
