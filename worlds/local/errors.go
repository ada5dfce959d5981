package local

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/stormctl/stormctl/internal/eventlog"
)

// errClosed is returned by every operation on a closed World.
var errClosed = errors.New("local: world is closed")

// unusable reports whether an I/O error means the store as a whole cannot be
// used (full disk, no permission, read-only or failing file system, a layout
// directory replaced by a file, no descriptors left), as opposed to a problem
// with one operation.
func unusable(err error) bool {
	if errors.Is(err, fs.ErrPermission) {
		return true
	}
	for _, errno := range []unix.Errno{unix.ENOSPC, unix.EDQUOT, unix.EROFS, unix.EIO, unix.ENOTDIR, unix.EMFILE, unix.ENFILE} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// storeErr wraps an I/O error of operation op with context, marking it
// eventlog.ErrUnavailable when the store is unusable.
func storeErr(op string, err error) error {
	if unusable(err) {
		return eventlog.Unavailable("local: "+op, err)
	}
	return fmt.Errorf("local: %s: %w", op, err)
}
