package netloop

import (
	"errors"
	"fmt"
)

var (
	// ErrServerClosed is the reason given to OnClose for connections
	// closed by Shutdown or Close, and the error of calls made after them.
	ErrServerClosed = errors.New("netloop: server closed")

	// ErrConnClosed is returned by Write, Post and AsyncWrite once the
	// connection is closed or closing.
	ErrConnClosed = errors.New("netloop: connection closed")

	// ErrIdleTimeout is the reason given to OnClose for a connection that
	// read and wrote nothing for its idle timeout.
	ErrIdleTimeout = errors.New("netloop: idle timeout")

	// ErrReadLimit is the reason given to OnClose for a connection whose
	// unconsumed input passed the read limit (WithReadLimit).
	ErrReadLimit = errors.New("netloop: unconsumed input above the read limit")

	// ErrListener is returned by NewServer for a net.Listener that has no
	// file descriptor (it does not implement syscall.Conn).
	ErrListener = errors.New("netloop: listener has no file descriptor")
)

// A PanicError is the reason given to OnClose for a connection whose
// handler panicked: the connection is closed, its loop goes on.
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the goroutine's stack at the panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("netloop: handler panicked: %v", e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
