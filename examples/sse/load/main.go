// Command load opens streams to examples/sse and measures what they get:
// the delay of each message, from the publish time inside it to its
// arrival, and, given the server's process id, the server's resident
// memory -settle after the last message of each burst, over what it held
// before the streams opened, and its CPU time from burst to burst.
//
//	go build -o sse ./examples/sse && go build -o load ./examples/sse/load
//	./sse & ./load -pid $! -streams 1000 -bursts 3
//
// A burst ends when no message has come for -settle, which must be
// shorter than the server's -quiet. The burst in progress when the last
// stream opened is not measured; the run ends after -bursts full bursts.
// It reads only the numbers at the head of each message's JSON, not the
// payload, so that its own CPU crowds the server's as little as it can
// on a small machine. The server's memory is read from Linux's /proc.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/internal/procfs"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// config is what the flags say.
type config struct {
	url     string
	streams int
	bursts  int
	pid     int
	settle  time.Duration
}

func parse(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:8080/events", "the server's event stream")
	fs.IntVar(&cfg.streams, "streams", 1000, "how many streams to open")
	fs.IntVar(&cfg.bursts, "bursts", 3, "how many full bursts to measure")
	fs.IntVar(&cfg.pid, "pid", 0, "the server's process `id`, to read its memory (0: do not)")
	fs.DurationVar(&cfg.settle, "settle", time.Second, "silence that ends a burst, after which the server's memory is read")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case cfg.streams <= 0 || cfg.bursts <= 0:
		err = errors.New("-streams and -bursts must be positive")
	case cfg.settle <= 0:
		err = errors.New("-settle must be positive")
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		fs.Usage()
	}
	return cfg, err
}

// run is the command; it returns the exit code: 2 for bad flags, 1 for a
// failure to open the streams or read the server's memory.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	res, err := measure(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, res)
	return 0
}

// A burst is one full burst as the streams saw it.
type burst struct {
	n   uint64        // the server's burst number
	rss uint64        // the server's VmRSS -settle after its last message; 0 without -pid
	cpu time.Duration // the server's CPU time then (user and system)
}

// result is what a run measured.
type result struct {
	streams  int
	startRSS uint64 // the server's VmRSS before the streams opened
	bursts   []burst
	delays   []time.Duration // of every message of the full bursts, sorted
	missed   uint64          // messages the streams did not get (seq gaps)
}

// counters is what the streams share: when the last message came and the
// highest burst number seen, for the burst ends, and from which burst on
// they keep delays.
type counters struct {
	last    atomic.Int64  // Unix ns of the last message
	burst   atomic.Uint64 // the highest burst number seen
	measure atomic.Uint64 // keep the delays of bursts from this one on; 0: none yet
}

func measure(ctx context.Context, cfg config) (result, error) {
	res := result{streams: cfg.streams}
	if cfg.pid != 0 {
		m, err := procfs.Status(cfg.pid)
		if err != nil {
			return res, err
		}
		res.startRSS = m.RSS
	}
	ctx, cancel := context.WithCancel(ctx)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	var cs counters
	cs.measure.Store(1 << 63)
	streams := make([]*streamStats, cfg.streams)
	opened := make(chan error, cfg.streams)
	var wg sync.WaitGroup
	for i := range streams {
		st := &streamStats{}
		streams[i] = st
		wg.Go(func() { st.read(ctx, c, cfg.url, &cs, opened) })
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	for range streams {
		select {
		case err := <-opened:
			if err != nil {
				return res, err
			}
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	cs.measure.Store(cs.burst.Load() + 1)

	// Wait for the end of each burst: -settle with no message.
	tick := time.NewTicker(cfg.settle / 20)
	defer tick.Stop()
	var sampled int64 // the last message the last reading came after
	for len(res.bursts) < cfg.bursts {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C:
		}
		last := cs.last.Load()
		if last == sampled || time.Since(time.Unix(0, last)) < cfg.settle {
			continue
		}
		sampled = last
		b := burst{n: cs.burst.Load()}
		if b.n < cs.measure.Load() {
			continue // in progress when the streams opened
		}
		if cfg.pid != 0 {
			m, err := procfs.Status(cfg.pid)
			if err != nil {
				return res, err
			}
			b.rss = m.RSS
			if b.cpu, err = procfs.CPU(cfg.pid); err != nil {
				return res, err
			}
		}
		res.bursts = append(res.bursts, b)
	}
	cancel()
	wg.Wait() // the streams are done with their stats
	for _, st := range streams {
		res.delays = append(res.delays, st.delays...)
		res.missed += st.missed
	}
	slices.Sort(res.delays)
	return res, nil
}

// streamStats is what one stream saw.
type streamStats struct {
	delays []time.Duration // of the messages of the bursts measured
	missed uint64
}

// read opens a stream, says on opened whether it could, and reads its
// events until ctx ends.
func (st *streamStats) read(ctx context.Context, c *http.Client, url string, cs *counters, opened chan<- error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		opened <- err
		return
	}
	resp, err := c.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	opened <- err
	if err != nil {
		return
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	var seq uint64
	rest := false // the line read is the rest of a line longer than r's buffer
	for {
		line, err := r.ReadSlice('\n')
		now := time.Now().UnixNano()
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return // the end of the stream, or ctx
		}
		head := !rest
		rest = errors.Is(err, bufio.ErrBufferFull)
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !head || !ok {
			continue
		}
		b, s, sent, ok := parseHead(data)
		if !ok {
			continue
		}
		cs.last.Store(now)
		for cur := cs.burst.Load(); b > cur && !cs.burst.CompareAndSwap(cur, b); cur = cs.burst.Load() {
		}
		if b >= cs.measure.Load() {
			st.delays = append(st.delays, time.Duration(now-sent))
			if seq != 0 && s > seq+1 {
				st.missed += s - seq - 1
			}
		}
		seq = s
	}
}

// parseHead reads the numbers at the head of a message's JSON:
// {"burst":B,"seq":S,"sent":T,...
func parseHead(data []byte) (burst, seq uint64, sent int64, ok bool) {
	var v [3]uint64
	for i, key := range []string{`{"burst":`, `,"seq":`, `,"sent":`} {
		var found bool
		if data, found = bytes.CutPrefix(data, []byte(key)); !found {
			return 0, 0, 0, false
		}
		n := 0
		for n < len(data) && '0' <= data[n] && data[n] <= '9' {
			n++
		}
		x, err := strconv.ParseUint(string(data[:n]), 10, 63)
		if err != nil {
			return 0, 0, 0, false
		}
		v[i], data = x, data[n:]
	}
	return v[0], v[1], int64(v[2]), true
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted, by
// nearest rank; zero if it is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(float64(len(sorted))*p/100)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func (r result) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "load: %d streams, %d bursts: %d messages, %d missed; delay p50 %v p99 %v max %v\n",
		r.streams, len(r.bursts), len(r.delays), r.missed,
		percentile(r.delays, 50).Round(10*time.Microsecond), percentile(r.delays, 99).Round(10*time.Microsecond),
		percentile(r.delays, 100).Round(10*time.Microsecond))
	if r.startRSS == 0 {
		return b.String()
	}
	mib := func(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) }
	over := make([]int64, len(r.bursts))
	fmt.Fprintf(&b, "load: server RSS %s MiB before the streams; after each burst:", mib(int64(r.startRSS)))
	for i, x := range r.bursts {
		over[i] = int64(x.rss) - int64(r.startRSS)
		fmt.Fprintf(&b, " %s", mib(int64(x.rss)))
	}
	slices.Sort(over)
	fmt.Fprintf(&b, " MiB; over start-up, median %s MiB\n", mib(over[len(over)/2]))
	if n := len(r.bursts); n > 1 {
		per := (r.bursts[n-1].cpu - r.bursts[0].cpu) / time.Duration(n-1)
		fmt.Fprintf(&b, "load: server CPU %v per burst and its quiet\n", per.Round(time.Millisecond))
	}
	return b.String()
}
