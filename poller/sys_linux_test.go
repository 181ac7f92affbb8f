package poller

import (
	"time"

	"golang.org/x/sys/unix"
)

// faultEpoll makes s.epollWait fail as fault says, then call real's.
func faultEpoll(s, real *sysTable, fault func() error) {
	s.epollWait = func(epfd int, evs []unix.EpollEvent, d time.Duration) (int, error) {
		if err := fault(); err != nil {
			return spurious(err)
		}
		return real.epollWait(epfd, evs, d)
	}
}
