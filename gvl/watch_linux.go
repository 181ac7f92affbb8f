package gvl

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// startWatch starts the watch as a goroutine reading a timerfd, which waits
// in the runtime's netpoller: the timer is the kernel's, not one in the
// heap of a P, so the Ps running the handoffs have no timer to check at
// each schedule (see the top of timeslice.go). The goroutine and its fd
// last as long as the watch: the first tick that finds nobody waiting
// closes the fd and ends the goroutine. If no timerfd can be had (out of
// fds), the watch runs on Go's timers instead. Must be called with mu held.
func (l *Lock) startWatch(d time.Duration) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		l.startTimer(d)
		return
	}
	if err := armTimerfd(fd, d); err != nil {
		unix.Close(fd)
		l.startTimer(d)
		return
	}
	// A nonblocking fd makes an os.File that reads through the netpoller.
	f := os.NewFile(uintptr(fd), "gvl-watch")
	go l.watchTimerfd(f, fd)
}

// watchTimerfd runs the ticks of a watch started by startWatch: it waits
// for the timerfd to expire, ticks, and arms it again for the next tick.
func (l *Lock) watchTimerfd(f *os.File, fd int) {
	defer f.Close()
	var buf [8]byte // the count of expirations, not needed
	for {
		if _, err := f.Read(buf[:]); err != nil {
			break
		}
		d, ok := l.tick()
		if !ok {
			return
		}
		if armTimerfd(fd, d) != nil {
			break
		}
	}
	// The timerfd failed, which it has no documented way to do while
	// open. The watch is still running (watching is true), so it must go
	// on: on Go's timers.
	l.mu.Lock()
	l.startTimer(time.Duration(l.timeslice() / 2))
	l.mu.Unlock()
}

// armTimerfd sets the timerfd fd to expire once, d from now.
func armTimerfd(fd int, d time.Duration) error {
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	return unix.TimerfdSettime(fd, 0, &its, nil)
}
