package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stormctl/stormctl/internal/devkit/node"
	"github.com/stormctl/stormctl/worlds"
)

// ErrNoNode is returned when node or npm cannot be run: the devkit worlds
// need both (Node 20 or newer).
var ErrNoNode = worlds.Prerequisite("the devkit worlds need node (20 or newer) and npm on PATH: install Node.js from https://nodejs.org or your package manager (apt install nodejs npm)")

// ErrInstall is returned when npm could not install the published packages
// (no registry, no disk): the machine's set-up, like a missing node.
var ErrInstall = worlds.Prerequisite("could not install the devkit packages")

// ErrNotBuilt is returned by Checkout for a directory whose packages are not
// built.
var ErrNotBuilt = errors.New("not a built vercel/workflow checkout")

// Layout is what the sidecar runs: its script and the directories of the
// packages (each holding package.json and dist/).
type Layout struct {
	Script   string
	Local    string
	Postgres string
	// Vercel is @workflow/world-vercel's directory ("" in a checkout's
	// layout: devkit-vercel runs the published package only).
	Vercel string
	// Package is a third-party World package's directory (PackageLayout),
	// opened as kind "package" through its own factory; "" for none.
	Package string
	// Env is added to the sidecar's environment (KEY=VALUE): what a
	// third-party package reads its configuration from (--world-env).
	Env []string
	// Source says where the packages come from: "published" (pinned by the
	// embedded lock), the checkout's directory, or a package's.
	Source string
}

// PackageLayout is the layout of a sidecar serving one World package from
// its directory dir (holding its package.json, its built entry and, above
// it, its dependencies), with env added to its environment. kind says how
// the sidecar opens it: "package" (a third-party package, through its own
// factory), or "local" or "postgres" (an upstream package, which the
// sidecar opens as the devkit worlds do, with their data directory or
// migrated database).
func PackageLayout(ctx context.Context, cacheDir, dir, kind string, env []string) (Layout, error) {
	if err := checkNode(ctx); err != nil {
		return Layout{}, err
	}
	script, err := writeScript(filepath.Join(cacheDir, "stormctl", "devkit", "package"))
	if err != nil {
		return Layout{}, err
	}
	l := Layout{Script: script, Env: env, Source: dir}
	switch kind {
	case "package":
		l.Package = dir
	case "local":
		l.Local = dir
	case "postgres":
		l.Postgres = dir
	default:
		return Layout{}, fmt.Errorf("devkit: package %s: unknown kind %q", dir, kind)
	}
	return l, nil
}

// minNode is the oldest Node major version the packages run on.
const minNode = 20

// Install returns the layout of the published packages, installing them into
// a directory under cacheDir the first time (a line on progress says so),
// and writing the script next to them.
func Install(ctx context.Context, cacheDir string, progress io.Writer) (Layout, error) {
	pkg, lock, err := manifests()
	if err != nil {
		return Layout{}, err
	}
	dir, err := InstallPackages(ctx, cacheDir, pkg, lock, "@workflow/world-local, @workflow/world-postgres and @workflow/world-vercel", progress)
	if err != nil {
		return Layout{}, err
	}
	script, err := writeScript(dir)
	if err != nil {
		return Layout{}, err
	}
	mods := filepath.Join(dir, "node_modules", "@workflow")
	return Layout{Script: script, Local: filepath.Join(mods, "world-local"), Postgres: filepath.Join(mods, "world-postgres"),
		Vercel: filepath.Join(mods, "world-vercel"), Source: "published"}, nil
}

// Checkout returns the layout of a vercel/workflow checkout's built packages
// (packages/world-local, packages/world-postgres), with the script written
// under cacheDir. A package without dist/index.js is refused with one line
// saying how to build it.
func Checkout(ctx context.Context, dir, cacheDir string) (Layout, error) {
	l, err := CheckoutLayout(dir)
	if err != nil {
		return Layout{}, err
	}
	if err := checkNode(ctx); err != nil {
		return Layout{}, err
	}
	scripts := filepath.Join(cacheDir, "stormctl", "devkit", "checkout")
	if l.Script, err = writeScript(scripts); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// CheckoutLayout checks that dir is a checkout with both packages built and
// returns their directories (Script is left empty). It touches nothing.
func CheckoutLayout(dir string) (Layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Layout{}, fmt.Errorf("--devkit-dir %s: %w", dir, err)
	}
	l := Layout{Local: filepath.Join(abs, "packages", "world-local"), Postgres: filepath.Join(abs, "packages", "world-postgres"), Source: abs}
	var missing []string
	for _, p := range []string{l.Local, l.Postgres} {
		for _, f := range []string{"package.json", filepath.Join("dist", "index.js")} {
			if _, err := os.Stat(filepath.Join(p, f)); err != nil {
				missing = append(missing, filepath.Join(p, f))
			}
		}
	}
	if len(missing) > 0 {
		return Layout{}, fmt.Errorf("--devkit-dir %s: %w: missing %s (in the checkout run: pnpm install && pnpm --filter \"@workflow/world-local...\" --filter \"@workflow/world-postgres...\" build)",
			dir, ErrNotBuilt, strings.Join(missing, ", "))
	}
	return l, nil
}

// InstallPackages installs the packages of a package.json and its
// package-lock.json with npm into a directory of their own under cacheDir
// (stormctl/devkit/<digest of both>), the first time only, and returns that
// directory (its node_modules holds them). what names the packages in the
// line a first install prints on progress. A failed or concurrent install
// never leaves a half-filled directory; ErrNoNode and ErrInstall say what
// the machine lacks.
func InstallPackages(ctx context.Context, cacheDir string, pkg, lock []byte, what string, progress io.Writer) (string, error) {
	if err := checkNode(ctx); err != nil {
		return "", err
	}
	dir := filepath.Join(cacheDir, "stormctl", "devkit", Digest(pkg, lock))
	if _, err := os.Stat(filepath.Join(dir, installedMarker)); err == nil {
		return dir, nil
	}
	if err := install(ctx, dir, pkg, lock, what, progress); err != nil {
		return "", err
	}
	return dir, nil
}

// installedMarker is written into an install directory once npm succeeded.
const installedMarker = ".stormctl-installed"

// install runs npm in a fresh directory next to dir and renames it into
// place, so a failed or concurrent install never leaves a half-filled dir.
// npm install (not ci) reads the lock: it installs the locked versions, and
// unlike ci it tolerates optional platform binaries a registry does not
// serve (cbor-x's cbor-extract, which falls back to JavaScript). Install
// scripts are not run: none of the packages needs one.
func install(ctx context.Context, dir string, pkg, lock []byte, what string, progress io.Writer) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("devkit: install the packages: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".install-")
	if err != nil {
		return fmt.Errorf("devkit: install the packages: %w", err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return fmt.Errorf("devkit: install the packages: %w", err)
		}
	}
	if progress != nil {
		fmt.Fprintf(progress, "devkit: installing %s (pinned by stormctl's package-lock.json) into %s with npm; first use only\n", what, dir)
	}
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("devkit: %w: npm install in %s: %v: %s", ErrInstall, tmp, err, tail(out.String(), 600))
	}
	if err := os.WriteFile(filepath.Join(tmp, installedMarker), nil, 0o644); err != nil {
		return fmt.Errorf("devkit: install the packages: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, installedMarker)); serr == nil {
			return nil // another stormctl installed the same lock meanwhile
		}
		return fmt.Errorf("devkit: install the packages: %w", err)
	}
	return nil
}

// writeScript writes the sidecar's script, with the modules it imports,
// into a directory of their own under dir (node.Script.Write) and returns
// the script's path.
func writeScript(dir string) (string, error) {
	return node.Sidecar.Write(dir)
}

// WriteScript writes script b into dir under name with its digest before
// the extension ("host.mjs" becomes "host-<digest>.mjs"), so a stormctl
// with another script never runs a stale one, and returns its path. The
// file is written once, atomically.
func WriteScript(dir, name string, b []byte) (string, error) {
	ext := filepath.Ext(name)
	path := filepath.Join(dir, strings.TrimSuffix(name, ext)+"-"+Digest(b)+ext)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("devkit: script %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(dir, ".script-*"+ext)
	if err != nil {
		return "", fmt.Errorf("devkit: script %s: %w", name, err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("devkit: script %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("devkit: script %s: %w", name, err)
	}
	return path, nil
}

// manifests are the sidecar's package.json and package-lock.json.
func manifests() (pkg, lock []byte, err error) {
	return node.Manifests(node.SidecarPackages)
}

// Digest is the first 16 hex digits of the SHA-256 of parts (node.Digest).
func Digest(parts ...[]byte) string { return node.Digest(parts...) }

// checkNode fails with ErrNoNode unless node (minNode or newer) and npm run.
func checkNode(ctx context.Context) error {
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("devkit: %s not found: %w", bin, ErrNoNode)
		}
	}
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	if err != nil {
		return fmt.Errorf("devkit: node --version: %v: %w", err, ErrNoNode)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); err != nil || n < minNode {
		return fmt.Errorf("devkit: node %s is too old: %w", strings.TrimSpace(string(out)), ErrNoNode)
	}
	return nil
}

// tail is the end of s, at most n bytes, on one line.
func tail(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
