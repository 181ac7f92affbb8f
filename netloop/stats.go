package netloop

import (
	"sync/atomic"

	"github.com/idlemux/idlemux/poller"
)

// Stats counts what a Server did since it was made. Every field only
// grows, but Open; subtract two snapshots to see what happened in between.
type Stats struct {
	// Accepted counts connections served, Closed those closed; Open is
	// the difference.
	Accepted, Closed uint64
	Open             int64
	// AcceptErrors counts failed accepts (see WithAcceptErrorFunc), and
	// accepted connections the loop could not watch.
	AcceptErrors uint64
	// Panics counts handler calls, and functions given to Loop.Post and
	// Loop.AfterFunc, that panicked.
	Panics uint64
	// Pauses counts the times a connection stopped being read because
	// its unwritten output passed the write limit.
	Pauses uint64
	// Reads and Writes count the read(2) and write(2) calls that moved
	// bytes, BytesRead and BytesWritten the bytes.
	Reads, Writes           uint64
	BytesRead, BytesWritten uint64
	// Loops holds each loop's own counters (waits, steps, wakeups...).
	Loops []poller.Stats
}

// counters is the live form of a loop's share of Stats.
type counters struct {
	accepted, closed, acceptErrors, panics, pauses atomic.Uint64
	reads, writes, bytesRead, bytesWritten         atomic.Uint64
}

func (s *Stats) add(c *counters) {
	s.Accepted += c.accepted.Load()
	s.Closed += c.closed.Load()
	s.AcceptErrors += c.acceptErrors.Load()
	s.Panics += c.panics.Load()
	s.Pauses += c.pauses.Load()
	s.Reads += c.reads.Load()
	s.Writes += c.writes.Load()
	s.BytesRead += c.bytesRead.Load()
	s.BytesWritten += c.bytesWritten.Load()
}
