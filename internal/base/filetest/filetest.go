// Package filetest makes and reads files for tests of code that writes
// them: places an output directory cannot be made or written, and the JSON
// a test reads back. Everything it makes lies under the test's t.TempDir(),
// and it fails the test on an error instead of returning it.
package filetest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// ReadOnlyDir returns a directory nobody may write to, or skips the test
// when this process ignores directory permissions (root).
func ReadOnlyDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if f, err := os.CreateTemp(dir, "probe-*"); err == nil {
		f.Close()
		t.Skip("this process may write to a read-only directory (running as root?)")
	}
	return dir
}

// UnderFile returns a path whose parent is a regular file, so that no
// directory can be made there.
func UnderFile(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(file, "out")
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
