package pgattach

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks the kernel to back b's whole 2 MiB pages with huge pages
// (when transparent huge pages are in madvise mode), so that filling b
// takes one page fault per 2 MiB instead of 512; pages already touched (a
// reused span the allocator zeroed) stay as they are. The advice outlives b:
// the address range keeps it when the runtime reuses it, which costs a
// long-running process that calls the forensics often some resident
// memory, never correctness. Advice only: failure changes nothing.
func adviseHuge(b []byte) {
	const huge = 2 << 20
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (p + huge - 1) &^ (huge - 1)
	end := (p + uintptr(len(b))) &^ (huge - 1)
	if end <= start {
		return
	}
	_ = unix.Madvise(b[start-p:end-p], unix.MADV_HUGEPAGE)
}
