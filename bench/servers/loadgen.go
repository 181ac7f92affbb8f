package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// goLoad is the driver's own load generator, for machines without
// redis-benchmark: the same SET/GET tests, connections, value size, keyspace
// and pipelining, closed loop, every reply checked. A request's latency runs
// from the write of its batch to the read of its reply, as redis-benchmark
// counts it; percentiles are nearest-rank over every request.
type goLoad struct{}

func (goLoad) Name() string { return "go" }

func (goLoad) Run(ctx context.Context, addr string, p loadParams) ([]testResult, error) {
	if p.Clients < 1 || p.Requests < 1 {
		return nil, fmt.Errorf("load: %d clients, %d requests", p.Clients, p.Requests)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	conns := make([]net.Conn, 0, p.Clients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var d net.Dialer
	for range p.Clients {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		c.SetDeadline(deadline)
		conns = append(conns, c)
	}
	readers := make([]*bufio.Reader, len(conns))
	for i, c := range conns {
		readers[i] = bufio.NewReaderSize(c, 64<<10)
	}
	value := strings.Repeat("x", p.Size)
	var res []testResult
	for _, test := range p.Tests {
		r, err := runTest(conns, readers, test, value, p)
		if err != nil {
			return nil, err
		}
		res = append(res, r)
	}
	return res, nil
}

// runTest runs p.Requests requests of one test spread over conns.
func runTest(conns []net.Conn, readers []*bufio.Reader, test, value string, p loadParams) (testResult, error) {
	if test != "set" && test != "get" {
		return testResult{}, fmt.Errorf("load: unknown test %q (want set or get)", test)
	}
	pipe := max(p.Pipeline, 1)
	lat := make([][]time.Duration, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	start := time.Now()
	for i := range conns {
		n := p.Requests / len(conns)
		if i < p.Requests%len(conns) {
			n++
		}
		lat[i] = make([]time.Duration, 0, n)
		wg.Go(func() {
			errs[i] = client(conns[i], readers[i], test, value, n, pipe, p.Keys, &lat[i])
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return testResult{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return testResult{
		Test:     test,
		Requests: p.Requests,
		RPS:      float64(p.Requests) / elapsed.Seconds(),
		P50ms:    ms(percentile(all, 50)),
		P99ms:    ms(percentile(all, 99)),
	}, nil
}

// client sends n requests in batches of pipe on one connection and checks
// every reply: +OK for SET, a bulk of the value's size or nil for GET.
func client(c net.Conn, r *bufio.Reader, test, value string, n, pipe, keys int, lat *[]time.Duration) error {
	var buf []byte
	for n > 0 {
		batch := min(n, pipe)
		buf = buf[:0]
		for range batch {
			key := fmt.Sprintf("key:%012d", rand.IntN(max(keys, 1)))
			if test == "set" {
				buf = appendCommand(buf, "SET", key, value)
			} else {
				buf = appendCommand(buf, "GET", key)
			}
		}
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return fmt.Errorf("load: %s: %w", test, err)
		}
		for range batch {
			rep, err := readReply(r, false)
			if err != nil {
				return fmt.Errorf("load: %s: %w", test, err)
			}
			*lat = append(*lat, time.Since(t0))
			if err := checkReply(test, rep, len(value)); err != nil {
				return err
			}
		}
		n -= batch
	}
	return nil
}

// checkReply says whether rep is a right answer to a SET or GET of a value
// of size bytes.
func checkReply(test string, rep reply, size int) error {
	switch {
	case test == "set" && rep.Kind == '+' && rep.Line == "OK":
	case test == "get" && rep.Kind == '$' && (rep.Len == size || rep.Len == -1):
	default:
		return fmt.Errorf("load: %s: wrong reply %q %q len %d", test, rep.Kind, rep.Line, rep.Len)
	}
	return nil
}
