//go:build !linux

package poller

import "time"

// Outside Linux a waiting goroutine blocks its thread in poll(2) or
// select(2): parking in the netpoller is built on epoll (park_linux.go).
type parker struct{}

func getParker(*counters) *parker                  { return nil }
func putParker(*parker)                            {}
func closeIdleParkers()                            {}
func (*parker) add(int32, int16) bool              { return false }
func (*parker) park(*counters, time.Duration) bool { return false }
