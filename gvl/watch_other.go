//go:build !linux

package gvl

import "time"

// startWatch starts the watch on Go's timers. Must be called with mu held.
func (l *Lock) startWatch(d time.Duration) {
	l.startTimer(d)
}
