package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/idlemux/idlemux/internal/procfs"
)

// slowParams shape the slow-reader test: one client SETs a Value-byte value,
// pipelines Gets GETs of it and then reads the replies at Rate bytes a
// second for Duration before it hangs up.
type slowParams struct {
	Value    int
	Gets     int
	Rate     int
	Duration time.Duration
	Sample   time.Duration
}

// slowResult is what a slow reader made one server hold.
type slowResult struct {
	Server   string  `json:"server"`
	Round    int     `json:"round"`
	Asked    uint64  `json:"asked_bytes"` // replies the client asked for
	Read     uint64  `json:"read_bytes"`  // replies it read before hanging up
	Before   uint64  `json:"before_rss"`  // RSS after the SET, before the GETs
	Max      uint64  `json:"max_rss"`     // highest RSS sampled while the client read
	Growth   uint64  `json:"growth_bytes"`
	After    uint64  `json:"after_rss"` // RSS a second after the client hung up
	WroteAll bool    `json:"wrote_all"` // whether the server read every GET
	CPU      float64 `json:"cpu_s"`
}

// runSlow runs the slow-reader test against srv.
func runSlow(binDir string, srv server, p slowParams, round int) (slowResult, error) {
	c, err := startServer(binDir, srv, 0)
	if err != nil {
		return slowResult{}, err
	}
	defer c.stop()
	r := slowResult{Server: srv.Name, Round: round, Asked: uint64(p.Gets) * uint64(p.Value)}
	conn, err := net.Dial("tcp", c.Addr)
	if err != nil {
		return r, err
	}
	defer conn.Close()
	// A small receive buffer, so that what the client does not read stays
	// in the server rather than in the client's kernel buffer.
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(64 << 10)
	}
	end := time.Now().Add(p.Duration + 10*time.Second)
	conn.SetDeadline(end)
	br := bufio.NewReaderSize(conn, 64<<10)
	if _, err := conn.Write(appendCommand(nil, "SET", "big", strings.Repeat("v", p.Value))); err != nil {
		return r, err
	}
	if rep, err := readReply(br, false); err != nil || rep.Kind != '+' {
		return r, fmt.Errorf("%s: SET big: %q %v", srv.Name, rep.Line, err)
	}
	time.Sleep(300 * time.Millisecond)
	smp := startSampler(c.Pid(), p.Sample)
	if x, ok := smp.take(); ok {
		r.Before = x.RSS
	}

	// The GETs go out from their own goroutine: a server that stops
	// reading blocks this write, which is the point.
	get := appendCommand(nil, "GET", "big")
	go func() {
		var all []byte
		for range p.Gets {
			all = append(all, get...)
		}
		conn.Write(all) // fails once the connection is closed below
	}()

	// Read at the slow rate for the test's duration.
	stop := time.Now().Add(p.Duration)
	chunk := make([]byte, max(p.Rate/100, 1))
	tick := time.NewTicker(10 * time.Millisecond)
	for time.Now().Before(stop) {
		<-tick.C
		n, err := io.ReadFull(br, chunk)
		r.Read += uint64(n)
		if err != nil {
			break
		}
	}
	tick.Stop()
	st, err := procfs.Status(c.Pid())
	if err != nil {
		smp.finish()
		return r, err
	}
	for _, x := range smp.finish() {
		r.Max = max(r.Max, x.RSS)
	}
	r.Max = max(r.Max, st.RSS)
	if r.Max > r.Before {
		r.Growth = r.Max - r.Before
	}
	conn.Close()
	time.Sleep(time.Second)
	if st, err = procfs.Status(c.Pid()); err != nil {
		return r, err
	}
	r.After = st.RSS
	cpu, err := procfs.CPU(c.Pid())
	if err != nil {
		return r, err
	}
	r.CPU = cpu.Seconds()
	// The server must still serve others.
	if err := ping(c.Addr); err != nil {
		return r, fmt.Errorf("%s after a slow reader: %w", srv.Name, err)
	}
	return r, nil
}
