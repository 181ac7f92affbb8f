package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idlemux/idlemux/gcstep"
)

// An event is one published message: its sequence number, for the SSE
// id, and its JSON, shared by every subscriber.
type event struct {
	seq  uint64
	data []byte
}

// message is the JSON of an event. Burst, Seq and Sent come first, so
// that a client can read them without decoding the rest; Sent is the
// publish time, in Unix nanoseconds, for the client's delay.
type message struct {
	Burst   uint64 `json:"burst"`
	Seq     uint64 `json:"seq"`
	Sent    int64  `json:"sent"`
	Payload string `json:"payload"`
}

// subBuffer is how many events a subscriber may fall behind before it
// misses some: a burst's worth at the default pace would hide a stalled
// client for a whole second.
const subBuffer = 64

// A broadcaster publishes events to every subscriber, in bursts.
type broadcaster struct {
	work *gcstep.Work // nil with the stepper off

	mu     sync.Mutex // guards subs and closed
	subs   map[chan event]struct{}
	closed bool // by close: no more events, nor subscribers

	published atomic.Uint64 // events
	dropped   atomic.Uint64 // events a subscriber missed, its buffer full
}

// newBroadcaster returns a broadcaster with room for about streams
// subscribers; work, if not nil, counts each publish as work in flight.
func newBroadcaster(work *gcstep.Work, streams int) *broadcaster {
	return &broadcaster{work: work, subs: make(map[chan event]struct{}, streams)}
}

// subscribe returns a new subscriber's channel, closed once the
// broadcaster is; after close, it returns a channel already closed.
func (b *broadcaster) subscribe() chan event {
	c := make(chan event, subBuffer)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(c)
		return c
	}
	b.subs[c] = struct{}{}
	return c
}

// unsubscribe forgets c.
func (b *broadcaster) unsubscribe(c chan event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs, c)
}

// close closes every subscriber's channel, which ends its stream, so
// that http.Server.Shutdown need not wait for them.
func (b *broadcaster) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for c := range b.subs {
		close(c)
	}
	clear(b.subs)
}

// publish sends e to every subscriber that has room for it. It never
// blocks: a subscriber that fell subBuffer events behind misses it.
func (b *broadcaster) publish(e event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.published.Add(1)
	for c := range b.subs {
		select {
		case c <- e:
		default:
			b.dropped.Add(1)
		}
	}
}

// run publishes until ctx ends: a message of about size bytes every
// every for burst, then nothing for quiet, and again. Each message is
// encoded afresh, as a server relaying live data would.
func (b *broadcaster) run(ctx context.Context, burst, every, quiet time.Duration, size int) {
	payload := strings.Repeat("x", max(size-80, 0)) // the rest of the JSON is about 80 bytes
	var seq uint64
	for n := uint64(1); ; n++ {
		t := time.NewTicker(every)
		end := time.Now().Add(burst)
		for now := time.Now(); now.Before(end); {
			seq++
			b.send(message{Burst: n, Seq: seq, Payload: payload})
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case now = <-t.C:
			}
		}
		t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-time.After(quiet):
		}
	}
}

// send stamps m, encodes it and publishes it, as work on b.work.
func (b *broadcaster) send(m message) {
	if b.work != nil {
		b.work.Begin()
		defer b.work.End()
	}
	m.Sent = time.Now().UnixNano()
	data, err := json.Marshal(m)
	if err != nil {
		panic(err) // a message of numbers and a string always encodes
	}
	b.publish(event{seq: m.Seq, data: data})
}
