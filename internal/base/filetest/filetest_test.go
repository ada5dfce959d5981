package filetest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
)

func TestReadOnlyDir(t *testing.T) {
	dir := filetest.ReadOnlyDir(t)
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err == nil {
		t.Errorf("wrote into %s", dir)
	}
}

func TestUnderFile(t *testing.T) {
	p := filetest.UnderFile(t)
	if err := os.MkdirAll(p, 0o755); err == nil {
		t.Errorf("made a directory at %s", p)
	}
}

func TestReadJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(path, []byte(`{"runs": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var got struct{ Runs int }
	filetest.ReadJSON(t, path, &got)
	if got.Runs != 3 {
		t.Errorf("read %+v, want runs 3", got)
	}
}
