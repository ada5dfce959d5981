package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stormctl/stormctl/internal/base/nodetest"
)

// TestNodeTests runs the workspace's own tests (test/*.test.mjs) with
// node --test, and fails when any fails or none ran.
func TestNodeTests(t *testing.T) {
	t.Parallel()
	nodetest.Need(t, "node")
	cmd := exec.CommandContext(t.Context(), "node", "--test", "--test-reporter=tap")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test in internal/devkit/node: %v\n%s", err, out)
	}
	pass := regexp.MustCompile(`(?m)^# pass (\d+)$`).FindSubmatch(out)
	if pass == nil || string(pass[1]) == "0" {
		t.Fatalf("node --test ran no test:\n%s", out)
	}
	t.Logf("node --test: %s passed", pass[1])
}

// devFiles are the workspace's files the type-check reads besides its
// scripts and tests: the dev-only manifest and lock (TypeScript, Node's
// types) and the compiler's configuration.
var devFiles = []string{"package.json", "package-lock.json", "tsconfig.json"}

// TestTypeCheck installs the workspace's dev dependencies (npm ci, into a
// copy of the workspace) and type-checks every script, module and test
// (tsc -p ., tsconfig.json: checkJs, noEmit).
func TestTypeCheck(t *testing.T) {
	t.Parallel()
	nodetest.Need(t, "node", "npm")
	dir := t.TempDir()
	files := slices.Clone(devFiles)
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".mjs") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	install := exec.CommandContext(t.Context(), "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--prefer-offline", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		nodetest.Skip(t, "npm ci of the workspace's dev dependencies (typescript, @types/node) failed: %v: %s", err, out)
	}
	tsc := exec.CommandContext(t.Context(), "node", filepath.Join("node_modules", "typescript", "bin", "tsc"), "-p", ".")
	tsc.Dir = dir
	if out, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("tsc -p . (the type-check of internal/devkit/node): %v\n%s", err, out)
	}
}

// relImport matches a relative import of a module: static (from '...'),
// bare (import '...') or dynamic (import('...')).
var relImport = regexp.MustCompile(`(?m)(?:\bfrom\s+|^import\s+|\bimport\()['"](\.{1,2}/[^'"]+)['"]`)

// imports is the workspace files script imports, transitively, itself
// included, sorted after it.
func imports(t *testing.T, script string) []string {
	t.Helper()
	seen := map[string]bool{script: true}
	queue := []string{script}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		b, err := os.ReadFile(filepath.FromSlash(f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range relImport.FindAllSubmatch(b, -1) {
			dep := path.Join(path.Dir(f), string(m[1]))
			if !seen[dep] {
				seen[dep] = true
				queue = append(queue, dep)
			}
		}
	}
	delete(seen, script)
	out := []string{script}
	for f := range seen {
		out = append(out, f)
	}
	slices.Sort(out[1:])
	return out
}

// TestScriptsCarryWhatTheyImport checks each Script's Files against what
// it imports, and that FS holds the scripts' files and the manifests and
// nothing else (no test, no manual script, no dev-only manifest).
func TestScriptsCarryWhatTheyImport(t *testing.T) {
	want := map[string]bool{}
	for _, s := range []Script{Host, Build, Sidecar} {
		got := slices.Clone(s.Files)
		slices.Sort(got[1:])
		if imp := imports(t, s.Name); !slices.Equal(got, imp) {
			t.Errorf("%s's Files are %q; it imports %q (with itself first)", s.Name, s.Files, imp)
		}
		for _, f := range s.Files {
			want[f] = true
		}
	}
	for _, dir := range []string{Stable, BetaLocal, BetaPostgres, BetaVercel, SidecarPackages} {
		pkg, lock, err := Manifests(dir)
		if err != nil || !json.Valid(pkg) || !json.Valid(lock) {
			t.Errorf("Manifests(%q): %v (valid JSON: %v, %v)", dir, err, json.Valid(pkg), json.Valid(lock))
		}
		want[dir+"/package.json"], want[dir+"/package-lock.json"] = true, true
	}
	err := fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !want[p] {
			t.Errorf("FS embeds %s, which no script imports and no install reads", p)
		}
		delete(want, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		t.Errorf("FS lacks %s", p)
	}
}

// TestImportsNothingOfTheModule: the package sits below the devkit engine
// and the devkit worlds' sidecar, which both import it; it imports neither
// them nor anything else of the module.
func TestImportsNothingOfTheModule(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/stormctl/stormctl/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}

// TestDigestCoversTheModules: a script's digest changes with the modules
// it imports, not only with its own file.
func TestDigestCoversTheModules(t *testing.T) {
	for _, s := range []Script{Host, Build, Sidecar} {
		whole, err := s.Digest()
		if err != nil {
			t.Fatal(err)
		}
		alone, err := Script{Name: s.Name, Files: s.Files[:1]}.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if whole == alone {
			t.Errorf("%s: the digest of its files is the digest of the script alone (%s)", s.Name, whole)
		}
	}
}

// TestWrittenScriptsRun writes each script into a directory, as the
// engine and the sidecar do, and runs it under node from there: its
// imports resolve beside it (a module left unwritten fails the import),
// and it answers as it should with no packages at all.
func TestWrittenScriptsRun(t *testing.T) {
	nodetest.Need(t, "node")
	dir := t.TempDir()
	for _, tt := range []struct {
		script Script
		args   []string
		// answer is the answer to an unknown op (a script speaking the
		// protocol); stderr what the script says otherwise.
		answer, stderr string
	}{
		{Host, nil, `{"id":1,"error":{"name":"Error","message":"unknown op nope","code":"","status":0}}`, ""},
		{Sidecar, nil, `{"id":1,"error":{"name":"Error","message":"unknown op nope","code":"","status":0}}`, ""},
		{Build, []string{filepath.Join(dir, "nothing")}, "", "workflows: no workflow sources"},
	} {
		t.Run(tt.script.Name, func(t *testing.T) {
			script, err := tt.script.Write(dir)
			if err != nil {
				t.Fatal(err)
			}
			again, err := tt.script.Write(dir)
			if err != nil || again != script {
				t.Fatalf("a second Write = %s, %v; want %s, the same directory", again, err, script)
			}
			digest, err := tt.script.Digest()
			if err != nil {
				t.Fatal(err)
			}
			base := strings.TrimSuffix(tt.script.Name, ".mjs")
			if want := filepath.Join(dir, base+"-"+digest, tt.script.Name); script != want {
				t.Fatalf("Write = %s, want %s", script, want)
			}
			for _, f := range tt.script.Files {
				got, err := os.ReadFile(filepath.Join(filepath.Dir(script), filepath.FromSlash(f)))
				want, _ := FS.ReadFile(f)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s beside the script: %v (same bytes as FS: %v)", f, err, bytes.Equal(got, want))
				}
			}
			answers, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer answers.Close()
			cmd := exec.CommandContext(t.Context(), "node", append([]string{script}, tt.args...)...)
			cmd.Dir = t.TempDir()
			cmd.Stdin = strings.NewReader(`{"id":1,"op":"nope"}` + "\n")
			cmd.ExtraFiles = []*os.File{w}
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			sc := bufio.NewScanner(answers)
			var lines []string
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			err = cmd.Wait()
			if tt.answer != "" {
				if err != nil || !slices.Equal(lines, []string{tt.answer}) {
					t.Fatalf("node %s: %v; answers %q, want %q; stderr:\n%s", script, err, lines, tt.answer, stderr.String())
				}
				return
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("node %s: %v; stderr %q, want it to say %q", script, err, stderr.String(), tt.stderr)
			}
		})
	}
}
