//go:build !linux

package local

import "errors"

// exchange would swap two paths atomically; only Linux has the call
// (renameat2 RENAME_EXCHANGE), so fs-unavailable needs Linux.
func exchange(a, b string) error {
	return errors.New("fs-unavailable needs Linux (renameat2 RENAME_EXCHANGE)")
}
