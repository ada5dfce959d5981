package reports

import "path/filepath"

// WriteMeta rewrites storm.json (atomically) with meta: a storm's record of
// what happened while it ran (the nemesis's faults) lands there as it goes.
func (a *Writer) WriteMeta(meta any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return WriteJSON(filepath.Join(a.dir, FileStorm), meta)
}
