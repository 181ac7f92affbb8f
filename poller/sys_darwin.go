package poller

import "golang.org/x/sys/unix"

// sysPipe: darwin has no pipe2, so the flags are set after the fact. A fork
// in between could leak the two fds into a child; the loop makes its pipe
// once, at NewLoop, so the window is tiny and rare.
func sysPipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return -1, -1, err
	}
	for _, fd := range p {
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return -1, -1, err
		}
	}
	return p[0], p[1], nil
}
