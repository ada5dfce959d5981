package arch_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/filetest"
	"github.com/stormctl/stormctl/internal/engines/builtinengines"
)

// engineHomes are the engines' own packages and their registry: the only
// places that may compare an engine's name.
var engineHomes = []string{"internal/engine", "internal/engines", "internal/devkit/devkitengine"}

// engineNameCompares returns, for the Go file src, every == or != and every
// switch case that compares a string with an engine's name (a literal, or a
// constant spelt like one: model.Name, devkitengine.Name, engine.Engine*),
// as "file:line: text".
func engineNameCompares(fset *token.FileSet, file *ast.File, names []string) []string {
	isName := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return false
			}
			v, err := strconv.Unquote(e.Value)
			return err == nil && slices.Contains(names, v)
		case *ast.SelectorExpr:
			x, ok := e.X.(*ast.Ident)
			if !ok {
				return false
			}
			return (e.Sel.Name == "Name" && (x.Name == "model" || x.Name == "devkitengine")) || strings.HasPrefix(e.Sel.Name, "Engine") && x.Name == "engine"
		}
		return false
	}
	var out []string
	at := func(n ast.Node, what string) {
		out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), what))
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X) || isName(n.Y)) {
				at(n, "compares an engine's name")
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if isName(e) {
					at(e, "switches on an engine's name")
				}
			}
		}
		return true
	})
	return out
}

// TestNoEngineNameComparedOutsideTheEngines: code outside the engines'
// own packages asks the registry (traits, capabilities), never compares
// an engine's name.
func TestNoEngineNameComparedOutsideTheEngines(t *testing.T) {
	names := builtinengines.Engines().Names()
	if len(names) < 2 {
		t.Fatalf("the registry holds %v: not the built-in engines", names)
	}
	root := filetest.Repo()
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || (strings.HasPrefix(n, ".") && p != root) {
				return filepath.SkipDir
			}
			for _, h := range engineHomes {
				if rel == h {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		found = append(found, engineNameCompares(fset, f, names)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// TestEngineNameComparesAreFound plants comparisons and checks each is
// caught, and that a comparison of something else is not.
func TestEngineNameComparesAreFound(t *testing.T) {
	names := []string{"model", "devkit"}
	tests := []struct {
		name, src string
		want      int
	}{
		{"a literal", `if eng == "devkit" { }`, 1},
		{"a literal on the left, !=", `if "model" != eng { }`, 1},
		{"an engine's constant", `if eng == devkitengine.Name { }`, 1},
		{"the old constant", `if eng == engine.EngineDevkit { }`, 1},
		{"a switch case", `switch eng { case "devkit": }`, 1},
		{"a trait", `if reg.Traits(eng).Published { }`, 0},
		{"another string", `if side == "real" { }`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", "package x\nfunc f() {\n"+tt.src+"\n}\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := engineNameCompares(fset, f, names); len(got) != tt.want {
				t.Errorf("%s: found %v, want %d", tt.src, got, tt.want)
			}
		})
	}
}
