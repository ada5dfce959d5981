package arch_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/arch"
	"github.com/stormctl/stormctl/internal/base/filetest"
)

const module = "github.com/stormctl/stormctl/"

// moduleImports reads every non-test Go file of the module under root and
// returns each package's imports of the module's own packages.
func moduleImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if dep, ok := strings.CutPrefix(path, module); ok && !slices.Contains(out[pkg], dep) {
				out[pkg] = append(out[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportsKeepToTheFloors reads the module's imports and fails on any
// that climbs a floor, or on a package on no floor.
func TestImportsKeepToTheFloors(t *testing.T) {
	imports := moduleImports(t, filetest.Repo())
	if len(imports) < 50 {
		t.Fatalf("read %d packages: not the module", len(imports))
	}
	for _, v := range arch.Check(arch.Floors, imports) {
		t.Error(v)
	}
}

// TestCheckFindsAPlantedUpwardImport plants imports that break the floors
// into a copy of the module's own and checks each is caught: the checker
// can fail.
func TestCheckFindsAPlantedUpwardImport(t *testing.T) {
	tests := []struct {
		name     string
		pkg, dep string
		want     string
	}{
		{"a ground helper imports the runner", "internal/base/plural", "internal/storm", `internal/base/plural (floor "ground") imports internal/storm (floor "storm", above it)`},
		{"a world imports the CLI", "worlds/local", "internal/cli", `worlds/local (floor "stores") imports internal/cli (floor "commands", above it)`},
		{"the storm directory imports the runner above it", "internal/storm/stormdir", "internal/storm", `internal/storm/stormdir (floor "analysis") imports internal/storm (floor "storm", above it)`},
		{"a package on no floor", "newpkg", "internal/history", "newpkg is on no floor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			imports := moduleImports(t, filetest.Repo())
			imports[tt.pkg] = append(imports[tt.pkg], tt.dep)
			got := arch.Check(arch.Floors, imports)
			var found bool
			for _, v := range got {
				found = found || strings.HasPrefix(v.Why, tt.want)
			}
			if !found {
				t.Errorf("planted %s -> %s: violations %v, want one starting %q", tt.pkg, tt.dep, got, tt.want)
			}
		})
	}
}

// TestArchitectureDocDrawsTheFloors checks that docs/architecture.md names
// every floor and every path on it, so the page and the table cannot drift.
func TestArchitectureDocDrawsTheFloors(t *testing.T) {
	b, err := os.ReadFile(filetest.Repo("docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, f := range arch.Floors {
		if !strings.Contains(doc, f.Name) {
			t.Errorf("docs/architecture.md does not name the floor %q", f.Name)
		}
		for _, p := range f.Paths {
			if !strings.Contains(doc, strings.TrimSuffix(p, "...")) {
				t.Errorf("docs/architecture.md does not name %s (floor %q)", p, f.Name)
			}
		}
	}
}

// TestFloorOf checks placement by the longest matching path.
func TestFloorOf(t *testing.T) {
	tests := []struct{ pkg, want string }{
		{"internal/storm", "storm"},
		{"internal/storm/stormdir", "analysis"},
		{"internal/base/clock", "ground"},
		{"worlds/devkitworld/sidecar", "stores"},
		{"internal/devkit/node", "stores"},
		{"internal/devkit/devkitengine", "engines"},
		{"internal/cli/docgen", "commands"},
		{"internal/stormy", ""},
	}
	for _, tt := range tests {
		i := arch.FloorOf(arch.Floors, tt.pkg)
		got := ""
		if i >= 0 {
			got = arch.Floors[i].Name
		}
		if got != tt.want {
			t.Errorf("FloorOf(%s) = %q, want %q", tt.pkg, got, tt.want)
		}
	}
}
