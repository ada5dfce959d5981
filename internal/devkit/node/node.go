// Package node is stormctl's Node workspace: the scripts stormctl runs
// under node, the modules they share, and the package manifests of every
// npm install stormctl makes for them.
//
//   - host.mjs, the devkit engine's runtime host (docs/host-protocol.md);
//   - build.mjs, the devkit engine's scenario builder;
//   - sidecar.mjs, the devkit worlds' sidecar (docs/sidecar-protocol.md);
//   - lib/, what they share: the transport (lib/transport.mjs: JSON lines,
//     answers by id, the shape of an error) and the package loading
//     (lib/packages.mjs); and the host's reading of world-postgres's
//     INSERTs (lib/pgevents.mjs), a module so that it is tested alone;
//   - stable/, beta-local/, beta-postgres/, beta-vercel/ and sidecar/: a
//     package.json and the package-lock.json that pins it for each install
//     (the engine's kit per channel and world kind, the sidecar's
//     packages).
//
// FS embeds exactly those files; the workspace's tests (test/, run by
// node --test), its dev-only package.json (TypeScript, for the
// type-check) and its tsconfig.json stay out of the binary.
// docs/node-workspace.md says how to run the tests and what they check.
//
// This package imports nothing of the module and stands on the floor of
// the worlds (internal/arch), below both packages that take their scripts
// and manifests from here: the devkit engine
// (internal/devkit/devkitengine) and the devkit worlds' sidecar
// (worlds/devkitworld/sidecar).
package node

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// FS holds the files the binary carries, by their paths in the workspace:
// the scripts, the modules they import and each install's manifests. It
// is an explicit list, so that tests and manual scripts never ride along.
//
//go:embed host.mjs build.mjs sidecar.mjs
//go:embed lib/transport.mjs lib/packages.mjs lib/pgevents.mjs
//go:embed stable/package.json stable/package-lock.json
//go:embed beta-local/package.json beta-local/package-lock.json
//go:embed beta-postgres/package.json beta-postgres/package-lock.json
//go:embed beta-vercel/package.json beta-vercel/package-lock.json
//go:embed sidecar/package.json sidecar/package-lock.json
var FS embed.FS

// The manifest directories of FS, one per npm install stormctl makes:
// each holds a package.json and the package-lock.json that pins it.
const (
	// Stable is the devkit engine's kit of the stable channel, for every
	// world kind.
	Stable = "stable"
	// BetaLocal is the devkit engine's kit of the beta channel on
	// world-local.
	BetaLocal = "beta-local"
	// BetaPostgres is the devkit engine's kit of the beta channel on
	// world-postgres.
	BetaPostgres = "beta-postgres"
	// BetaVercel is the devkit engine's kit of the beta channel on
	// world-vercel (its storage against stormctl's emulation of the
	// backend, world-local's in-process queue).
	BetaVercel = "beta-vercel"
	// SidecarPackages are the devkit worlds' storage packages, which the
	// sidecar runs.
	SidecarPackages = "sidecar"
)

// Manifests returns the package.json and package-lock.json of the
// manifest directory dir (Stable, ...); an error wrapping fs.ErrNotExist
// when FS has none there.
func Manifests(dir string) (pkg, lock []byte, err error) {
	if pkg, err = FS.ReadFile(path.Join(dir, "package.json")); err != nil {
		return nil, nil, fmt.Errorf("devkit: packages %s: %w", dir, err)
	}
	if lock, err = FS.ReadFile(path.Join(dir, "package-lock.json")); err != nil {
		return nil, nil, fmt.Errorf("devkit: packages %s: %w", dir, err)
	}
	return pkg, lock, nil
}

// Script is one of the workspace's entry scripts with the workspace
// modules it imports: the files it runs from.
type Script struct {
	// Name is the script's file in the workspace ("host.mjs").
	Name string
	// Files are the files of FS it runs from, the script first, by their
	// paths in the workspace: the script imports the others by the same
	// relative paths.
	Files []string
}

// The scripts. A test checks that each one's Files are exactly what it
// imports, transitively, of the workspace.
var (
	// Host is the devkit engine's runtime host.
	Host = Script{Name: "host.mjs", Files: []string{"host.mjs", "lib/packages.mjs", "lib/pgevents.mjs", "lib/transport.mjs"}}
	// Build is the devkit engine's scenario builder.
	Build = Script{Name: "build.mjs", Files: []string{"build.mjs", "lib/packages.mjs"}}
	// Sidecar is the devkit worlds' sidecar.
	Sidecar = Script{Name: "sidecar.mjs", Files: []string{"sidecar.mjs", "lib/packages.mjs", "lib/transport.mjs"}}
)

// Digest is the digest of the script's files, their paths and contents:
// it changes when any of them does, a shared module's included.
func (s Script) Digest() (string, error) {
	parts := make([][]byte, 0, 2*len(s.Files))
	for _, f := range s.Files {
		b, err := FS.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("devkit: script %s: %w", s.Name, err)
		}
		parts = append(parts, []byte(f), b)
	}
	return Digest(parts...), nil
}

// Write writes the script's files into a directory of their own under
// dir, named by the script and its digest (host.mjs into
// dir/host-<digest>/host.mjs, with lib/ beside it, where its relative
// imports find it), and returns the script's path. A stormctl whose files
// differ writes another directory, so none runs another's stale script.
// The directory is written once, atomically (a temporary directory renamed
// into place); a later call finds it. The script resolves the packages it
// loads from the directories it is given (its working directory, its
// arguments), not from where it is written.
func (s Script) Write(dir string) (string, error) {
	digest, err := s.Digest()
	if err != nil {
		return "", err
	}
	ext := filepath.Ext(s.Name)
	set := filepath.Join(dir, strings.TrimSuffix(s.Name, ext)+"-"+digest)
	script := filepath.Join(set, filepath.FromSlash(s.Name))
	if _, err := os.Stat(script); err == nil {
		return script, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("devkit: script %s: %w", s.Name, err)
	}
	tmp, err := os.MkdirTemp(dir, ".script-")
	if err != nil {
		return "", fmt.Errorf("devkit: script %s: %w", s.Name, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	// MkdirTemp makes it 0700; the directory is as readable as a file.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("devkit: script %s: %w", s.Name, err)
	}
	for _, f := range s.Files {
		b, err := FS.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("devkit: script %s: %w", s.Name, err)
		}
		to := filepath.Join(tmp, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return "", fmt.Errorf("devkit: script %s: %w", s.Name, err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			return "", fmt.Errorf("devkit: script %s: %w", s.Name, err)
		}
	}
	if err := os.Rename(tmp, set); err != nil {
		if _, serr := os.Stat(script); serr == nil {
			return script, nil // another stormctl wrote the same files meanwhile
		}
		return "", fmt.Errorf("devkit: script %s: %w", s.Name, err)
	}
	return script, nil
}

// Digest is the first 16 hex digits of the SHA-256 of parts, each
// followed by a zero byte.
func Digest(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
