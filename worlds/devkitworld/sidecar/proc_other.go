//go:build !linux

package sidecar

import "syscall"

// procAttr puts the sidecar in a process group of its own; without
// Pdeathsig outside Linux, its stdin closing is what ends it when stormctl
// dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
