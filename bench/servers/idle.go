package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/idlemux/idlemux/internal/procfs"
)

// idleResult is what holding Conns idle connections cost one server.
type idleResult struct {
	Server  string            `json:"server"`
	Round   int               `json:"round"`
	Conns   int               `json:"conns"`
	Before  uint64            `json:"before_rss"` // RSS with one connection served, settled
	Held    uint64            `json:"held_rss"`   // RSS after the connections sat idle for Settle
	Peak    uint64            `json:"peak_rss"`
	PerConn float64           `json:"per_conn_bytes"` // (Held-Before)/Conns
	CPU     float64           `json:"cpu_s"`
	Stats   map[string]string `json:"server_stats"` // what the server printed at exit
}

// raiseNoFile raises this process's soft limit on open files to the hard
// limit (children inherit it) and returns the new soft limit.
func raiseNoFile() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, err
		}
	}
	return lim.Cur, nil
}

// runIdle opens conns connections to srv, has each one served once (a PING,
// so the server has touched whatever it keeps per connection), leaves them
// idle for settle and measures what they cost.
func runIdle(binDir string, srv server, conns int, settle time.Duration, round int) (r idleResult, err error) {
	c, err := startServer(binDir, srv, 0)
	if err != nil {
		return idleResult{}, err
	}
	defer func() {
		stats, serr := c.stop()
		r.Stats = stats
		if err == nil {
			err = serr
		}
	}()
	r = idleResult{Server: srv.Name, Round: round, Conns: conns}
	time.Sleep(settle)
	st, err := procfs.Status(c.Pid())
	if err != nil {
		return r, err
	}
	r.Before = st.RSS

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	held := make([]net.Conn, conns)
	defer func() {
		for _, h := range held {
			if h != nil {
				h.Close()
			}
		}
	}()
	// Dial in parallel, a few at a time: the listen backlog is finite.
	const parallel = 32
	errs := make(chan error, parallel)
	var wg sync.WaitGroup
	next := make(chan int)
	for range parallel {
		wg.Go(func() {
			for i := range next {
				h, err := servedConn(ctx, c.Addr)
				if err != nil {
					select {
					case errs <- fmt.Errorf("connection %d: %w", i, err):
					default:
					}
					cancel()
					continue
				}
				held[i] = h
			}
		})
	}
	for i := range conns {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return r, fmt.Errorf("%s: %w", srv.Name, err)
	default:
	}
	time.Sleep(settle)
	if st, err = procfs.Status(c.Pid()); err != nil {
		return r, err
	}
	r.Held, r.Peak = st.RSS, st.Peak
	r.PerConn = (float64(r.Held) - float64(r.Before)) / float64(conns)
	cpu, err := procfs.CPU(c.Pid())
	if err != nil {
		return r, err
	}
	r.CPU = cpu.Seconds()
	// A server that dropped idle connections would make them look cheap.
	if err := pingConn(held[conns-1]); err != nil {
		return r, fmt.Errorf("%s: an idle connection no longer answers: %w", srv.Name, err)
	}
	return r, nil
}

// servedConn dials addr and has one PING answered on the connection.
func servedConn(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	h, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := pingConn(h); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// pingConn sends PING on h and reads +PONG. It reads byte-sized pieces
// through a small reader so nothing beyond the reply is consumed.
func pingConn(h net.Conn) error {
	h.SetDeadline(time.Now().Add(10 * time.Second))
	defer h.SetDeadline(time.Time{})
	if _, err := h.Write(appendCommand(nil, "PING")); err != nil {
		return err
	}
	rep, err := readReply(bufio.NewReaderSize(h, 16), true)
	if err != nil {
		return err
	}
	if rep.Kind != '+' || rep.Line != "PONG" {
		return fmt.Errorf("PING answered %q %q", rep.Kind, rep.Line)
	}
	return nil
}
