package redisserver

import "syscall"

// procAttr puts the server in a process group of its own (a terminal's
// Ctrl-C goes to stormctl, which stops it) and has the kernel kill it when
// the thread that started it dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
