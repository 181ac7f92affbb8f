package rss

import (
	"errors"
	"sync"
	"time"
)

// Watch samples Current every period on a goroutine of its own until the
// returned stop is called. stop ends the goroutine, waits for it, and
// returns the higher of Peak and the highest sample: a peak read closer
// than Peak alone, which on Linux can read a few hundred KiB low (see
// Peak). Where Current is not supported, stop returns Peak. Calls of stop
// after the first return what the first did. Watch panics if period is
// not positive.
func Watch(period time.Duration) (stop func() (uint64, error)) {
	if period <= 0 {
		panic("rss: Watch with a period that is not positive")
	}
	// highest is written by the goroutine's samples and then, once it
	// has ended (done), by stop's own: never by two at once.
	var highest uint64
	sample := func() bool {
		r, err := Current()
		if err != nil {
			return !errors.Is(err, errors.ErrUnsupported)
		}
		highest = max(highest, r)
		return true
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if !sample() {
			return
		}
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	var once sync.Once
	var peakBytes uint64
	var peakErr error
	return func() (uint64, error) {
		once.Do(func() {
			close(quit)
			<-done
			sample()
			peakBytes, peakErr = Peak()
			if peakErr == nil {
				peakBytes = max(peakBytes, highest)
			}
		})
		return peakBytes, peakErr
	}
}
