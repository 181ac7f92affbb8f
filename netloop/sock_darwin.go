package netloop

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// darwin has neither SOCK_NONBLOCK nor accept4: the flags are set after
// the call, under syscall.ForkLock (a lock, not a system call) so that a
// concurrent fork and exec cannot inherit the fd in between, as package
// net does.

// socket opens a non-blocking, close-on-exec stream socket.
func socket(family int) (int, error) {
	syscall.ForkLock.RLock()
	fd, err := unix.Socket(family, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("fcntl", err)
	}
	return fd, nil
}

// accept accepts a connection as a non-blocking, close-on-exec fd; errors
// are the bare errno, for the caller to sort.
func accept(lfd int) (int, unix.Sockaddr, error) {
	syscall.ForkLock.RLock()
	fd, sa, err := unix.Accept(lfd)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, sa, nil
}
