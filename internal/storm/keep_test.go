package storm

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeepFiles(t *testing.T) {
	tests := []struct {
		name      string
		keep      bool
		withFile  bool
		missing   bool // the dir is gone before keepFiles looks
		wantStays bool
	}{
		{"no --keep: removed", false, true, false, false},
		{"--keep, files: stays and is named", true, true, false, true},
		{"--keep, nothing in it: removed", true, false, false, false},
		{"--keep, no dir: nothing named", true, false, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "stormctl-x")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.withFile {
				if err := os.WriteFile(filepath.Join(dir, "log.jsonl"), []byte("{}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.missing {
				if err := os.Remove(dir); err != nil {
					t.Fatal(err)
				}
			}
			var logged strings.Builder
			keepFiles(dir, tc.keep, slog.New(slog.NewTextHandler(&logged, nil)))
			_, err := os.Stat(dir)
			if stays := err == nil; stays != tc.wantStays {
				t.Errorf("dir stays = %v, want %v (stat: %v)", stays, tc.wantStays, err)
			}
			if named := strings.Contains(logged.String(), dir); named != tc.wantStays {
				t.Errorf("the log names the dir = %v, want %v: %q", named, tc.wantStays, logged.String())
			}
		})
	}
}
