//go:build !linux

package poller

import (
	"time"

	"golang.org/x/sys/unix"
)

// Outside Linux a waiting goroutine blocks its thread in poll(2) or
// select(2): parking in the netpoller is built on epoll (park_linux.go).
type parker struct{}

func getParker(*counters) *parker                           { return nil }
func putParker(*parker)                                     {}
func closeIdleParkers()                                     {}
func (*parker) add(int32, uint32) bool                      { return false }
func (*parker) park(*counters, time.Duration) (bool, error) { return false, nil }
func (*parker) revents(int32) uint32                        { return 0 }

// The select sets a parked Select would use; never used here.
const (
	selectIn  = unix.POLLIN | unix.POLLHUP | unix.POLLERR
	selectOut = unix.POLLOUT | unix.POLLERR
	selectEx  = unix.POLLPRI
)

// A Loop waits on its thread here.
type loopParker struct{}

type parkResult uint8

const (
	parkNo parkResult = iota
	parkDone
	parkDistrust
)

func newLoopParker(backend, *counters, func() (int, error)) *loopParker    { return nil }
func (*loopParker) wait(*counters, time.Duration) (int, parkResult, error) { return 0, parkNo, nil }
func (*loopParker) close() error                                           { return nil }
