package netloop_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idlemux/idlemux/netloop"
)

// echoLines answers each line with itself.
func echoLines(c *netloop.Conn) {
	for {
		in := c.Peek()
		i := bytes.IndexByte(in, '\n')
		if i < 0 {
			return
		}
		c.Write(in[:i+1])
		c.Discard(i + 1)
	}
}

// goroutineServer is the naive baseline: package net, a goroutine per
// connection.
func goroutineServer(b *testing.B) (addr string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadSlice('\n')
					if err != nil {
						return
					}
					if _, err := c.Write(line); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String(), func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

// BenchmarkPingPong: clients each send a line and wait for it back, b.N
// round trips in all; reports the latency percentiles of a round trip.
func BenchmarkPingPong(b *testing.B) {
	for _, clients := range []int{1, 16} {
		for _, server := range []string{"netloop-1", "netloop-2", "goroutines"} {
			b.Run(fmt.Sprintf("clients=%d/%s", clients, server), func(b *testing.B) {
				var addr string
				var stop func()
				switch server {
				case "goroutines":
					addr, stop = goroutineServer(b)
				default:
					loops := 1
					if server == "netloop-2" {
						loops = 2
					}
					srv, err := netloop.Listen("tcp", "127.0.0.1:0", netloop.HandlerFuncs{Data: echoLines}, netloop.WithLoops(loops))
					if err != nil {
						b.Fatal(err)
					}
					done := make(chan error, 1)
					go func() { done <- srv.Serve() }()
					addr = srv.Addr().String()
					stop = func() { srv.Close(); <-done }
				}
				defer stop()
				pingPong(b, addr, clients)
			})
		}
	}
}

func pingPong(b *testing.B, addr string, clients int) {
	conns := make([]net.Conn, clients)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	lat := make([][]time.Duration, clients)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, c := range conns {
		n := b.N / clients
		if i < b.N%clients {
			n++
		}
		wg.Go(func() {
			msg := []byte("ping\n")
			buf := make([]byte, len(msg))
			l := make([]time.Duration, 0, n)
			for range n {
				start := time.Now()
				if _, err := c.Write(msg); err != nil {
					b.Error(err)
					return
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Error(err)
					return
				}
				l = append(l, time.Since(start))
			}
			lat[i] = l
		})
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2].Nanoseconds()), "p50-ns")
		b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds()), "p99-ns")
	}
}
