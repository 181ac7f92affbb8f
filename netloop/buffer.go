package netloop

import "sync"

// Connections borrow their inbound and outbound buffers from one pool while
// they hold bytes, and give them back as soon as they hold none, so an idle
// connection costs no buffer. sync.Pool is emptied by garbage collection,
// so the buffers of a burst go back to the heap once it is over (and to
// the operating system when a stepper releases memory).
const (
	// bufSize is a fresh buffer's capacity: a few pipelined requests or
	// replies.
	bufSize = 4 << 10
	// maxPooled is the largest capacity kept in the pool; a buffer grown
	// beyond it for a big request or reply is left to the collector.
	maxPooled = 64 << 10
)

var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, bufSize)
	return &b
}}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > maxPooled {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
