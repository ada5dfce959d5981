package devkitengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/stormctl/stormctl/internal/devkit/devkitscen"
	"github.com/stormctl/stormctl/internal/devkit/node"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

// Channel is a line of the published packages the engine runs.
type Channel string

// The channels.
const (
	// Stable is the 4.x line: the legacy contract (spec 3, ids evnt_+ULID).
	Stable Channel = "stable"
	// Beta is the newest mutually consistent 5.0.0 betas on the registry.
	Beta Channel = "beta"
)

// Channels lists the channels, in the order help lists them.
func Channels() []Channel { return []Channel{Stable, Beta} }

// ParseChannel parses --devkit-channel ("" is Stable).
func ParseChannel(s string) (Channel, error) {
	if s == "" {
		return Stable, nil
	}
	for _, c := range Channels() {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown devkit channel %q (valid: stable, beta)", s)
}

// ErrChannelWorld is matched by CheckPair's refusal of a channel that has
// no kit for a world kind.
var ErrChannelWorld = errors.New("the channel has no packages for the world")

// CheckPair refuses, in one line and before anything installs, a channel
// that has no kit for worlds of kind k (node.Manifests has no manifest
// directory manifestDir names). Every devkit world has one on both
// channels: devkit-vercel's beta kit runs @workflow/world-vercel
// 5.0.0-beta.50 against the backend emulation's slot contract
// (worlds/vercel/backend: slot ids allocated at commit, events.createBatch,
// sinceCursor deltas), which it once lacked.
func CheckPair(ch Channel, k devkitworld.Kind) error {
	if _, _, err := node.Manifests(manifestDir(ch, k)); err != nil {
		return fmt.Errorf("--devkit-channel %s on world-%s: %w (%s/ is not in the Node workspace)", ch, k, ErrChannelWorld, manifestDir(ch, k))
	}
	return nil
}

// manifestDir is the manifest directory of package node (node.Stable,
// node.BetaLocal, node.BetaPostgres, node.BetaVercel) of channel ch for a
// world of kind k: stable's packages agree across the three worlds; the
// betas of each world pin their own (world-postgres's an older core).
func manifestDir(ch Channel, k devkitworld.Kind) string {
	if ch == Stable {
		return node.Stable
	}
	return "beta-" + string(k)
}

// Kit is what a cell's runtime runs: the installed packages, the host
// script beside them, and the scenarios compiled by the kit's builder.
type Kit struct {
	Channel Channel
	Kind    devkitworld.Kind
	// Dir holds node_modules; Host is the host script in it.
	Dir  string
	Host string
	// Workflows and Steps are the compiled scenario bundles.
	Workflows string
	Steps     string
	// Source is "published" or the checkout (--devkit-dir) the packages
	// are linked from.
	Source string
}

// Prepare returns channel ch's kit for worlds of kind k, installing its
// packages under cacheDir and compiling the scenarios the first time
// (lines on progress say so).
func Prepare(ctx context.Context, cacheDir string, ch Channel, k devkitworld.Kind, progress io.Writer) (Kit, error) {
	if err := CheckPair(ch, k); err != nil {
		return Kit{}, err
	}
	pkg, lock, err := node.Manifests(manifestDir(ch, k))
	if err != nil {
		return Kit{}, fmt.Errorf("devkit engine: channel %s has no packages for world-%s: %w", ch, k, err)
	}
	world := "world-" + string(k)
	if k == devkitworld.ThirdParty { // a package world: the kit's world-local gives the queue where the package's cannot
		world = "world-local"
	}
	dir, err := sidecar.InstallPackages(ctx, cacheDir, pkg, lock, fmt.Sprintf("the devkit engine's %s packages (@workflow/core, %s, builders)", ch, world), progress)
	if err != nil {
		return Kit{}, err
	}
	kit := Kit{Channel: ch, Kind: k, Dir: dir, Source: "published"}
	return kit.finish(ctx, progress)
}

// finish writes the host (with the modules it imports) beside the kit's
// packages and compiles the scenarios with its builder.
func (k Kit) finish(ctx context.Context, progress io.Writer) (Kit, error) {
	var err error
	if k.Host, err = node.Host.Write(k.Dir); err != nil {
		return Kit{}, err
	}
	if k.Workflows, k.Steps, err = compile(ctx, k.Dir, progress); err != nil {
		return Kit{}, err
	}
	return k, nil
}

// bundles is what build.mjs prints: the compiled bundles' paths.
type bundles struct {
	Workflows string `json:"workflows"`
	Steps     string `json:"steps"`
}

// builtMarker holds a build's bundles once it succeeded.
const builtMarker = "bundles.json"

// compile compiles the scenarios with the builder installed in dir, into
// dir/builds/<digest of the sources and the build script with the modules
// it imports>, the first time. The build sits under dir so that the
// bundles resolve the kit's packages.
func compile(ctx context.Context, dir string, progress io.Writer) (workflows, steps string, err error) {
	script, err := node.Build.Digest()
	if err != nil {
		return "", "", fmt.Errorf("devkit engine: %w", err)
	}
	parts := [][]byte{[]byte(script)}
	err = fs.WalkDir(devkitscen.Sources(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(devkitscen.Sources(), p)
		parts = append(parts, []byte(p), b)
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("devkit engine: read the scenarios: %w", err)
	}
	build := filepath.Join(dir, "builds", sidecar.Digest(parts...))
	if b, err := os.ReadFile(filepath.Join(build, builtMarker)); err == nil {
		return readBundles(build, b)
	}
	builder, err := node.Build.Write(dir)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(filepath.Dir(build), 0o755); err != nil {
		return "", "", fmt.Errorf("devkit engine: build the scenarios: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(build), ".build-")
	if err != nil {
		return "", "", fmt.Errorf("devkit engine: build the scenarios: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := devkitscen.WriteSources(tmp); err != nil {
		return "", "", err
	}
	if progress != nil {
		fmt.Fprintf(progress, "devkit engine: compiling the scenarios with the kit's @workflow/builders into %s; first use only\n", build)
	}
	cmd := exec.CommandContext(ctx, "node", builder, tmp)
	cmd.Dir = dir // the builder runs from the kit, whose node_modules it loads
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("devkit engine: compile the scenarios (node %s %s): %v: %s", builder, tmp, err, tailOf(stderr.String(), 800))
	}
	var b bundles
	if err := json.Unmarshal(lastLine(out), &b); err != nil {
		return "", "", fmt.Errorf("devkit engine: compile the scenarios: unreadable build result %q: %w", tailOf(string(out), 300), err)
	}
	// Paths relative to the build, so the directory can move into place.
	for _, p := range []*string{&b.Workflows, &b.Steps} {
		if rel, err := filepath.Rel(tmp, *p); err == nil && !strings.HasPrefix(rel, "..") {
			*p = rel
		}
	}
	marker, err := json.Marshal(b)
	if err != nil {
		return "", "", fmt.Errorf("devkit engine: build the scenarios: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, builtMarker), marker, 0o644); err != nil {
		return "", "", fmt.Errorf("devkit engine: build the scenarios: %w", err)
	}
	if err := os.Rename(tmp, build); err != nil {
		if _, serr := os.Stat(filepath.Join(build, builtMarker)); serr != nil {
			return "", "", fmt.Errorf("devkit engine: build the scenarios: %w", err)
		} // another stormctl built the same sources meanwhile
	}
	b2, err := os.ReadFile(filepath.Join(build, builtMarker))
	if err != nil {
		return "", "", fmt.Errorf("devkit engine: build the scenarios: %w", err)
	}
	return readBundles(build, b2)
}

// readBundles reads a build's marker: its bundles, relative to build.
func readBundles(build string, marker []byte) (string, string, error) {
	var b bundles
	if err := json.Unmarshal(marker, &b); err != nil || b.Workflows == "" || b.Steps == "" {
		return "", "", fmt.Errorf("devkit engine: %s is unreadable (%v): remove %s and run again", filepath.Join(build, builtMarker), err, build)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(build, p)
	}
	return abs(b.Workflows), abs(b.Steps), nil
}

// lastLine is the last non-empty line of out.
func lastLine(out []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return []byte(lines[len(lines)-1])
}

// tailOf is the end of s, at most n bytes, on one line.
func tailOf(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
