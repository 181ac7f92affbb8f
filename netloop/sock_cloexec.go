//go:build linux || freebsd

package netloop

import (
	"os"

	"golang.org/x/sys/unix"
)

// socket opens a non-blocking, close-on-exec stream socket.
func socket(family int) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	return fd, os.NewSyscallError("socket", err)
}

// accept accepts a connection as a non-blocking, close-on-exec fd; errors
// are the bare errno, for the caller to sort.
func accept(lfd int) (int, unix.Sockaddr, error) {
	return unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
}
