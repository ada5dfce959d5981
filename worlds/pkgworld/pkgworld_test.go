package pkgworld_test

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"testing"

	"github.com/stormctl/stormctl/eventlog"
	"github.com/stormctl/stormctl/worlds"
	"github.com/stormctl/stormctl/worlds/pkgworld"
	"github.com/stormctl/stormctl/worlds/worldtest"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    pkgworld.Ref
		wantErr bool
	}{
		{in: "package:@workflow-worlds/starter", want: pkgworld.Ref{Name: "@workflow-worlds/starter"}},
		{in: "package:@workflow-worlds/redis@0.2.2", want: pkgworld.Ref{Name: "@workflow-worlds/redis", Version: "0.2.2"}},
		{in: "package:left-pad@latest", want: pkgworld.Ref{Name: "left-pad", Version: "latest"}},
		{in: "package:/abs/dir", want: pkgworld.Ref{Path: "/abs/dir"}},
		{in: "package:", wantErr: true},
		{in: "package:@scope/x@", wantErr: true},
		{in: "package:Not A Name", wantErr: true},
		{in: "local", wantErr: true},
	} {
		got, err := pkgworld.Parse(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseEnv(t *testing.T) {
	if err := pkgworld.ParseEnv([]string{"A=1", "B="}); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"A", "=1", "A B=1"} {
		if err := pkgworld.ParseEnv([]string{bad}); err == nil {
			t.Errorf("ParseEnv(%q) = nil, want an error", bad)
		}
	}
}

// open installs ref (first use: npm) and returns its world's entry.
func open(t *testing.T, ref string, env ...string) (*pkgworld.World, worlds.Entry) {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("skipping: package worlds need %s: %v", bin, err)
		}
	}
	r, err := pkgworld.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	in, err := pkgworld.Install(t.Context(), cache, r, nil)
	if errors.Is(err, worlds.ErrPrerequisite) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	w, err := pkgworld.Open(t.Context(), in, env, cache, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop() })
	spec, err := w.Spec(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return w, w.Entry(ref, spec)
}

// TestStarter runs the starter's storage through the sidecar: the
// contract it claims, and a run's events written and read back in order.
func TestStarter(t *testing.T) {
	w, e := open(t, "package:@workflow-worlds/starter@0.2.1")
	spec, err := w.Spec(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if spec.World != "4.1.0-beta.2" || spec.SpecVersion == nil || *spec.SpecVersion != 2 {
		t.Errorf("spec = %+v, want @workflow/world 4.1.0-beta.2, specVersion 2", spec)
	}
	ww, err := e.Open(t.Context(), worlds.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ww.Close()
	run := worldtest.NewRun(t, ww, eventlog.Run{Scheme: eventlog.SchemeULID})
	worldtest.Append(t, ww, run, worldtest.Draft(eventlog.RunCreated, ""))
	evs := worldtest.Append(t, ww, run, worldtest.Draft(eventlog.StepCreated, "step_1"))
	got := worldtest.ListAll(t, ww, run)
	if len(evs) != 1 || len(got) < 1 || got[len(got)-1].ID != evs[0].ID {
		t.Fatalf("wrote %v, read %v", evs, got)
	}
}

// TestNotFound: a package the registry does not have is ErrNotFound.
func TestNotFound(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("no npm")
	}
	r, _ := pkgworld.Parse("package:@workflow-worlds/no-such-world-stormctl@0.0.1")
	_, err := pkgworld.Install(t.Context(), t.TempDir(), r, nil)
	if !errors.Is(err, pkgworld.ErrNotFound) {
		t.Fatalf("Install = %v, want ErrNotFound", err)
	}
}

// FuzzParse: any world name parses or is refused, never panics, and a
// parsed npm ref prints back as it was written after the prefix.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"package:@workflow-worlds/redis@0.2.2", "package:left-pad", "package:./x", "package:", "package:@@", "package:a@", "local"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := pkgworld.Parse(s)
		if err != nil || r.Path != "" {
			return
		}
		if got := pkgworld.Prefix + r.String(); got != s {
			t.Errorf("Parse(%q) = %+v, which prints as %q", s, r, got)
		}
	})
}
