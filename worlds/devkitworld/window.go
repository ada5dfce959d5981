package devkitworld

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

// This file keeps count of where the sidecar spent each write's
// mint-to-commit window. The sidecar finds the point between the package's
// id mint and its publish by a hook on the package's own calls
// (world-local: the write of a file under its events directory;
// world-postgres: an INSERT into "workflow"."workflow_events"); a package
// version that writes otherwise leaves the hook nothing to find, and the
// window would silently not be spent. Counting it makes that loud.

// The hooks a window is spent in (the sidecar's names).
const (
	HookEventsFile   = "events-file"            // world-local's event file write
	HookEventsInsert = "workflow_events-insert" // world-postgres's INSERT
)

// WindowCheckAfter is how many writes of one event type that asked for a
// window a World takes before SelfCheck holds it to having spent one.
const WindowCheckAfter = 8

// ErrWindowNotSpent is matched (errors.Is) by a *WindowError.
var ErrWindowNotSpent = errors.New("the devkit sidecar never spent the mint-to-commit window")

// WindowError says that a devkit world's writes of one type asked for a
// mint-to-commit window (a --latency other than none) and the sidecar's
// hook never found its point in the package to spend it: the package
// version writes otherwise than the hook knows, and a storm would measure
// the package without the latency it asked for.
type WindowError struct {
	World   string // devkit-local or devkit-postgres
	Package string // the package's name
	Version string // the package's version, as the sidecar read it
	Type    eventlog.Type
	Asked   int // writes of Type that asked for a window, none spent
	Hook    string
}

func (e *WindowError) Error() string {
	return fmt.Sprintf("%s: %s %s: the mint-to-commit delay was applied to none of its first %d %s writes "+
		"(the sidecar's %s hook does not find its point in this package version): "+
		"run with --latency none, or a package version the sidecar knows",
		e.World, e.Package, e.Version, e.Asked, e.Type, e.Hook)
}

// Is matches ErrWindowNotSpent, and worlds.ErrPrerequisite: the machine's
// set-up (the package version it runs), like a missing node.
func (e *WindowError) Is(target error) bool {
	return target == ErrWindowNotSpent || target == worlds.ErrPrerequisite
}

// WindowCount is how many writes of one type asked for a mint-to-commit
// window, and where the sidecar spent it: per hook, with "none" for the
// writes no hook found.
type WindowCount struct {
	Asked int            `json:"asked"`
	Spent map[string]int `json:"spent"`
}

// spent is how many of the writes had their window spent, in any hook.
func (c WindowCount) spent() int {
	n := 0
	for hook, k := range c.Spent {
		if hook != "none" {
			n += k
		}
	}
	return n
}

// windowAnswer is a create's answer about its window.
type windowAnswer struct {
	Asked bool    `json:"asked"`
	Spent *string `json:"spent"`
}

// packageName is the npm name of kind k's package.
func packageName(k Kind) string { return "@workflow/world-" + string(k) }

// hook is the hook kind k's windows are spent in.
func hook(k Kind) string {
	if k == Postgres {
		return HookEventsInsert
	}
	return HookEventsFile
}

// countWindow counts a write of type t that asked for a window, as the
// sidecar answered about it.
func (w *World) countWindow(t eventlog.Type, a *windowAnswer) {
	where := "none"
	if a != nil && a.Spent != nil {
		where = *a.Spent
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.windows[t]
	if c.Spent == nil {
		c.Spent = map[string]int{}
	}
	c.Asked++
	c.Spent[where]++
	w.windows[t] = c
}

// Windows returns how many of the World's writes asked for a window and
// where they were spent, per event type.
func (w *World) Windows() map[eventlog.Type]WindowCount {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[eventlog.Type]WindowCount, len(w.windows))
	for t, c := range w.windows {
		out[t] = WindowCount{Asked: c.Asked, Spent: maps.Clone(c.Spent)}
	}
	return out
}

var _ worlds.SelfChecker = (*World)(nil)

// SelfCheck implements worlds.SelfChecker: a *WindowError when the writes
// of some type asked for a window WindowCheckAfter times or more and none
// had it spent. Without a latency profile (none) no write asks, and it
// never fails.
func (w *World) SelfCheck() error {
	counts := w.Windows()
	for _, t := range slices.Sorted(maps.Keys(counts)) {
		if c := counts[t]; c.Asked >= WindowCheckAfter && c.spent() == 0 {
			return &WindowError{World: "devkit-" + string(w.kind), Package: packageName(w.kind), Version: w.version,
				Type: t, Asked: c.Asked, Hook: hook(w.kind)}
		}
	}
	return nil
}
