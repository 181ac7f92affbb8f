package lab

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"
)

// ClientEnv is the environment variable that makes the process the tcp
// workload's client; its value is a clientSpec as JSON.
const ClientEnv = "IDLEMUX_FOOTPRINT_CLIENT"

// clientSpec is the tcp workload's load: conns connections to addr, each
// sending perBurst requests one after the other in every burst, each
// asking the server to allocate garbage bytes; gap is the idle time after
// every burst, the last one included.
type clientSpec struct {
	Addr     string        `json:"addr"`
	Conns    int           `json:"conns"`
	Bursts   int           `json:"bursts"`
	PerBurst int           `json:"per_burst"`
	Garbage  int           `json:"garbage"`
	Gap      time.Duration `json:"gap"`
}

// clientResult is the client's last line on stdout, after "result ".
type clientResult struct {
	Latencies []time.Duration `json:"latencies_ns"` // every request's round trip
	Error     string          `json:"error,omitempty"`
}

// The client tells the server where it is on its standard output, one line
// each: "start B" as burst B begins, "end B" once its last response is in,
// and at the very end "result " and a clientResult as JSON.
const (
	lineStart  = "start"
	lineEnd    = "end"
	lineResult = "result"
)

// ClientMain runs the tcp workload's client described by specJSON and
// exits. The client is a process of its own so that the server's RSS, CPU
// time and system calls are the server's alone, as for a real server.
func ClientMain(specJSON string) {
	var spec clientSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "footprint client:", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	res := runClient(spec, func(line string) {
		out.WriteString(line + "\n")
		out.Flush()
	})
	b, _ := json.Marshal(res)
	out.WriteString(lineResult + " ")
	out.Write(b)
	out.WriteString("\n")
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "footprint client:", err)
		os.Exit(1)
	}
}

// runClient connects, runs every burst and gap, and closes. say reports
// progress to the server.
func runClient(spec clientSpec, say func(string)) clientResult {
	conns := make([]net.Conn, 0, spec.Conns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range spec.Conns {
		c, err := net.Dial("tcp", spec.Addr)
		if err != nil {
			return clientResult{Error: err.Error()}
		}
		conns = append(conns, c)
	}
	lat := make([][]time.Duration, len(conns))
	errs := make([]error, len(conns))
	ids := make([]uint64, len(conns))
	for b := range spec.Bursts {
		say(fmt.Sprintf("%s %d", lineStart, b))
		var wg sync.WaitGroup
		for i, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if errs[i] != nil {
					return
				}
				rng := rand.New(rand.NewPCG(uint64(i), uint64(b)))
				for range spec.PerBurst {
					ids[i]++
					d, err := roundTrip(c, ids[i], uint32(spec.Garbage), rng.Uint32())
					if err != nil {
						errs[i] = fmt.Errorf("connection %d, request %d: %w", i, ids[i], err)
						return
					}
					lat[i] = append(lat[i], d)
				}
			}()
		}
		wg.Wait()
		say(fmt.Sprintf("%s %d", lineEnd, b))
		time.Sleep(spec.Gap)
	}
	var res clientResult
	for _, l := range lat {
		res.Latencies = append(res.Latencies, l...)
	}
	if err := errors.Join(errs...); err != nil {
		res.Error = err.Error()
	}
	return res
}

// roundTrip sends one request and waits for its response, which it checks.
func roundTrip(c net.Conn, id uint64, size, seed uint32) (time.Duration, error) {
	var req, resp [msgSize]byte
	binary.LittleEndian.PutUint64(req[:], id)
	binary.LittleEndian.PutUint32(req[8:], size)
	binary.LittleEndian.PutUint32(req[12:], seed)
	t0 := time.Now()
	if _, err := c.Write(req[:]); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(c, resp[:]); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	if binary.LittleEndian.Uint64(resp[:]) != id || binary.LittleEndian.Uint64(resp[8:]) != expectedSum(size, seed) {
		return 0, errors.New("wrong response")
	}
	return d, nil
}
