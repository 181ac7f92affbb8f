package poller

import "golang.org/x/sys/unix"

func sysPipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return -1, -1, err
	}
	return p[0], p[1], nil
}
