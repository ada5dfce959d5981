package node

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// channels are the lockfiles whose packages one storm cell runs together,
// by channel, as the code installs them:
//
//   - A devkit-engine cell runs on a devkit world (devkit-local,
//     devkit-postgres, devkit-vercel). The world's own storage runs in
//     the sidecar, from the packages of sidecar/ (sidecar.Install, the
//     same whatever the channel); the runtime runs in the engine's hosts,
//     from the kit of the cell's channel (devkitengine.Prepare, whose
//     manifestDir picks stable/ for every world kind on the stable
//     channel, beta-<kind>/ on the beta channel).
//   - The stable channel is the line the devkit worlds run: its kit and
//     the sidecar load the same @workflow/world-local, world-postgres and
//     world-vercel (docs/devkit.md and docs/engine-devkit.md name one
//     version of each), so the runtime and the world it is measured
//     against are one release. Their locks must agree.
//   - The beta channel runs the 5.0 betas, newer than the world's sidecar
//     by design, and its kit differs by world kind: beta-local/,
//     beta-postgres/ and beta-vercel/ never install for the same cell (a
//     cell has one world kind), and they pin different cores on purpose
//     (world-postgres
//     5.0.0-beta.27, the newest installable, needs the beta.35 core, while
//     world-local's newest runs with beta.55: beta-postgres/package.json
//     says so). Each stands alone.
//
// A package:… world installs the user's package with npm at run time, from
// no lockfile of this workspace.
var channels = []struct {
	name string
	dirs []string
}{
	{"stable (the engine's kit and the devkit worlds' sidecar)", []string{Stable, SidecarPackages}},
	{"beta on world-local", []string{BetaLocal}},
	{"beta on world-postgres", []string{BetaPostgres}},
	{"beta on world-vercel", []string{BetaVercel}},
}

// lockfile is an install's package.json and package-lock.json (npm's
// lockfileVersion 3), as far as the checks read them.
type lockfile struct {
	dir string
	// deps are package.json's dependencies; root the lock's record of
	// them (packages[""].dependencies).
	deps, root map[string]string
	// installed is every package the lock installs, by its install path
	// (node_modules/a/node_modules/b).
	installed map[string]string
}

func readLockfile(t *testing.T, dir string) lockfile {
	t.Helper()
	pkg, lock, err := Manifests(dir)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(pkg, &p); err != nil {
		t.Fatalf("%s/package.json: %v", dir, err)
	}
	var l struct {
		LockfileVersion int `json:"lockfileVersion"`
		Packages        map[string]struct {
			Version      string            `json:"version"`
			Dependencies map[string]string `json:"dependencies"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(lock, &l); err != nil {
		t.Fatalf("%s/package-lock.json: %v", dir, err)
	}
	if l.LockfileVersion != 3 {
		t.Fatalf("%s/package-lock.json: lockfileVersion %d, want 3 (npm 9 or newer)", dir, l.LockfileVersion)
	}
	out := lockfile{dir: dir, deps: p.Dependencies, root: l.Packages[""].Dependencies, installed: map[string]string{}}
	for at, e := range l.Packages {
		if at != "" {
			out.installed[at] = e.Version
		}
	}
	return out
}

// clone is a copy of l whose maps a test may change.
func (l lockfile) clone() lockfile {
	return lockfile{dir: l.dir, deps: maps.Clone(l.deps), root: maps.Clone(l.root), installed: maps.Clone(l.installed)}
}

// nameOf is the package installed at an install path.
func nameOf(at string) string {
	return at[strings.LastIndex(at, "node_modules/")+len("node_modules/"):]
}

// versions is every version of each package l installs (a package may be
// installed more than once, nested under the packages that need another
// version).
func (l lockfile) versions() map[string][]string {
	out := map[string][]string{}
	for at, v := range l.installed {
		n := nameOf(at)
		if !slices.Contains(out[n], v) {
			out[n] = append(out[n], v)
		}
	}
	for _, vs := range out {
		slices.Sort(vs)
	}
	return out
}

// exactVersion is a pin of one version (no range).
var exactVersion = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// stale says where a lockfile no longer installs what its package.json
// pins: a package.json edited without running npm install after.
func stale(l lockfile) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(l.deps)) {
		spec := l.deps[name]
		if l.root[name] != spec {
			out = append(out, fmt.Sprintf("%s: package.json pins %s %s, its package-lock.json records %q: run npm install there", l.dir, name, spec, l.root[name]))
			continue
		}
		if got := l.installed["node_modules/"+name]; exactVersion.MatchString(spec) && got != spec {
			out = append(out, fmt.Sprintf("%s: package.json pins %s %s, its package-lock.json installs %q: run npm install there", l.dir, name, spec, got))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.root)) {
		if _, ok := l.deps[name]; !ok {
			out = append(out, fmt.Sprintf("%s: package-lock.json records %s, which package.json no longer pins: run npm install there", l.dir, name))
		}
	}
	return out
}

// shared reports whether two installs share package name in the sense
// the lockfile rule checks: it is one of the Workflow DevKit's own
// (@workflow/*, workflow), the contract the runtime and the worlds speak,
// or both package.json files pin it. What npm resolved beneath them for
// other packages (a @babel/code-frame, an xdg-app-paths) drifts with the
// day a lock was made and is not compared.
func shared(name string, a, b lockfile) bool {
	if strings.HasPrefix(name, "@workflow/") || name == "workflow" {
		return true
	}
	_, inA := a.deps[name]
	_, inB := b.deps[name]
	return inA && inB
}

// disagreements says where two installs of one channel pin different
// versions of a package they share (shared), wherever in their trees they
// install it.
func disagreements(a, b lockfile) []string {
	va, vb := a.versions(), b.versions()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(va)) {
		wb, ok := vb[name]
		if !ok || !shared(name, a, b) || slices.Equal(va[name], wb) {
			continue
		}
		out = append(out, fmt.Sprintf("%s/package-lock.json installs %s %s, %s/package-lock.json %s",
			a.dir, name, strings.Join(va[name], " and "), b.dir, strings.Join(wb, " and ")))
	}
	return out
}

// TestLockfilesAgree fails when two lockfiles of one channel pin different
// versions of a package they share, or when a lockfile no longer installs
// what its package.json pins.
func TestLockfilesAgree(t *testing.T) {
	placed := map[string]bool{}
	for _, ch := range channels {
		var locks []lockfile
		for _, dir := range ch.dirs {
			placed[dir] = true
			l := readLockfile(t, dir)
			for _, s := range stale(l) {
				t.Error(s)
			}
			locks = append(locks, l)
		}
		for i := range locks {
			for _, b := range locks[i+1:] {
				for _, d := range disagreements(locks[i], b) {
					t.Errorf("channel %s: %s", ch.name, d)
				}
			}
		}
	}
	for _, dir := range []string{Stable, BetaLocal, BetaPostgres, BetaVercel, SidecarPackages} {
		if !placed[dir] {
			t.Errorf("the install %s/ is on no channel of this test's channels: say which installs it runs beside", dir)
		}
	}
	// The rule has something to compare: the stable kit and the sidecar
	// share the world packages.
	var n int
	a, b := readLockfile(t, Stable), readLockfile(t, SidecarPackages)
	for name := range a.versions() {
		if _, ok := b.versions()[name]; ok && shared(name, a, b) {
			n++
		}
	}
	if n < 3 {
		t.Errorf("stable/ and sidecar/ share %d packages the rule compares; want the three world packages at least", n)
	}
}

// TestLockfileCheckFails plants disagreements into copies of the real
// lockfiles and checks that the rule finds each (and that what it leaves
// alone on purpose stays alone).
func TestLockfileCheckFails(t *testing.T) {
	stable, side := readLockfile(t, Stable), readLockfile(t, SidecarPackages)
	for _, tt := range []struct {
		name  string
		plant func(stable, side *lockfile)
		// want is a piece of the one finding; "" for none.
		want string
	}{
		{"none planted", func(_, _ *lockfile) {}, ""},
		{
			"a world package bumped in one lock",
			func(_, side *lockfile) { side.installed["node_modules/@workflow/world-local"] = "4.4.2" },
			"sidecar/package-lock.json 4.4.2",
		},
		{
			"a second @workflow/world nested in one lock",
			func(stable, _ *lockfile) {
				stable.installed["node_modules/@workflow/world-postgres/node_modules/@workflow/world"] = "9.9.9"
			},
			"@workflow/world",
		},
		{
			"a package both manifests pin, outside @workflow",
			func(stable, side *lockfile) {
				stable.deps["pg"], side.deps["pg"] = "8.0.0", "8.0.0"
				side.installed["node_modules/pg"] = "8.0.1"
			},
			"installs pg ",
		},
		{
			"a transitive package outside @workflow, not compared",
			func(_, side *lockfile) { side.installed["node_modules/xdg-app-paths"] = "1.0.0" },
			"",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := stable.clone(), side.clone()
			tt.plant(&a, &b)
			got := disagreements(a, b)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("disagreements = %q, want none", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
				t.Errorf("disagreements = %q, want one saying %q", got, tt.want)
			}
		})
	}
	t.Run("a package.json pin its lock does not install", func(t *testing.T) {
		l := stable.clone()
		l.deps["@workflow/core"] = "4.8.10"
		if got := stale(l); len(got) != 1 || !strings.Contains(got[0], "records \"4.8.9\"") {
			t.Errorf("stale = %q, want one finding naming the lock's 4.8.9", got)
		}
		l = stable.clone()
		l.installed["node_modules/@workflow/core"] = "4.8.10"
		if got := stale(l); len(got) != 1 || !strings.Contains(got[0], "installs \"4.8.10\"") {
			t.Errorf("stale = %q, want one finding naming the installed 4.8.10", got)
		}
	})
}
