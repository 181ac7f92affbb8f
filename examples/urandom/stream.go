package main

import (
	"crypto/sha256"
	"hash"
	"sync/atomic"
)

// A digest follows one side of the stream: how many bytes went through and
// their SHA-256, in order. It is not safe for concurrent use; the readers
// serialise on the loop goroutine or on a mutex.
type digest struct {
	h hash.Hash
	n atomic.Int64 // read by the progress display while the run goes on
}

func newDigest() *digest { return &digest{h: sha256.New()} }

// add records p as the next bytes of the stream.
func (d *digest) add(p []byte) {
	d.h.Write(p) // a hash.Hash never returns an error
	d.n.Add(int64(len(p)))
}

// sum is the byte count and the SHA-256 so far.
func (d *digest) sum() streamSum {
	var s streamSum
	d.h.Sum(s.sha256[:0])
	s.n = d.n.Load()
	return s
}

// A streamSum identifies a stream: equal sums mean, for any purpose but an
// attack, equal streams.
type streamSum struct {
	n      int64
	sha256 [sha256.Size]byte
}
