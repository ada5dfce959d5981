//go:build !linux

package pgattach

// adviseHuge does nothing where huge pages cannot be asked for.
func adviseHuge([]byte) {}
