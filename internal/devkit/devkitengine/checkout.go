package devkitengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

// ErrNotBuilt is returned by FromCheckout for a checkout whose packages
// are not built.
var ErrNotBuilt = sidecar.ErrNotBuilt

// checkoutPackages are the packages of a vercel/workflow checkout a kit
// links: node_modules name, directory under packages/.
func checkoutPackages(k devkitworld.Kind) [][2]string {
	out := [][2]string{
		{"@workflow/core", "core"},
		{"@workflow/world-" + string(k), "world-" + string(k)},
		{"@workflow/builders", "builders"},
		{"workflow", "workflow"},
	}
	if k == devkitworld.Vercel { // world-local's queue stands in for @vercel/queue
		out = append(out, [2]string{"@workflow/world-local", "world-local"})
	}
	return out
}

// FromCheckout returns the kit of a vercel/workflow checkout's built
// packages (either line: 4.x or main's 5.0) for worlds of kind k: a
// directory under cacheDir whose node_modules link to the checkout's
// packages (which resolve their own dependencies from the checkout), with
// the host beside them and the scenarios compiled by the checkout's own
// builder, afresh on every call (a checkout changes between storms). A
// package without its package.json or dist/ is refused in one line saying
// how to build it.
func FromCheckout(ctx context.Context, dir, cacheDir string, k devkitworld.Kind, progress io.Writer) (Kit, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Kit{}, fmt.Errorf("--devkit-dir %s: %w", dir, err)
	}
	var missing, filters []string
	for _, p := range checkoutPackages(k) {
		pdir := filepath.Join(abs, "packages", p[1])
		filters = append(filters, fmt.Sprintf("--filter %q", p[0]+"..."))
		for _, f := range []string{"package.json", "dist"} {
			if _, err := os.Stat(filepath.Join(pdir, f)); err != nil {
				missing = append(missing, filepath.Join(pdir, f))
			}
		}
	}
	if len(missing) > 0 {
		return Kit{}, fmt.Errorf("--devkit-dir %s: %w for the devkit engine: missing %s (in the checkout run: pnpm install && pnpm %s build)",
			dir, ErrNotBuilt, strings.Join(missing, ", "), strings.Join(filters, " "))
	}
	kitDir := filepath.Join(cacheDir, "stormctl", "devkit", "checkout-"+sidecar.Digest([]byte(abs), []byte(k)))
	mods := filepath.Join(kitDir, "node_modules")
	if err := os.RemoveAll(mods); err != nil {
		return Kit{}, fmt.Errorf("devkit engine: link the checkout's packages: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(kitDir, "builds")); err != nil {
		return Kit{}, fmt.Errorf("devkit engine: link the checkout's packages: %w", err)
	}
	for _, p := range checkoutPackages(k) {
		link := filepath.Join(mods, filepath.FromSlash(p[0]))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return Kit{}, fmt.Errorf("devkit engine: link the checkout's packages: %w", err)
		}
		if err := os.Symlink(filepath.Join(abs, "packages", p[1]), link); err != nil && !errors.Is(err, os.ErrExist) {
			return Kit{}, fmt.Errorf("devkit engine: link the checkout's packages: %w", err)
		}
	}
	kit := Kit{Channel: "checkout", Kind: k, Dir: kitDir, Source: abs}
	return kit.finish(ctx, progress)
}
