// Package crash turns a panic into an error that carries its stack, so a
// bug on any goroutine stormctl owns reaches the command's exit code (4,
// "internal") instead of ending the process with Go's own exit code 2,
// which stormctl reserves for bad usage.
package crash

import (
	"fmt"
	"runtime/debug"
)

// Error is a recovered panic: the value it panicked with and the stack of
// the goroutine that panicked.
type Error struct {
	Value any
	Stack []byte
}

// Error says what the panic was; the stack is in Stack.
func (e *Error) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *Error) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Recover, deferred directly (defer crash.Recover(&err)), turns a panic of
// the deferring function into an *Error in *err. A nil panic value or
// runtime.Goexit passes through untouched.
func Recover(err *error) {
	if p := recover(); p != nil {
		*err = &Error{Value: p, Stack: debug.Stack()}
	}
}

// Go returns fn made safe to run on a goroutine of an errgroup: a panic in
// it comes back as its *Error.
func Go(fn func() error) func() error {
	return func() (err error) {
		defer Recover(&err)
		return fn()
	}
}
