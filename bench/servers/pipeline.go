package main

import (
	"context"
	"fmt"
	"time"

	"github.com/idlemux/idlemux/internal/procfs"
)

// pipeResult is one run of pipelined load against a server with a given
// number of event loops.
type pipeResult struct {
	Server string       `json:"server"`
	Loops  int          `json:"loops"`
	Round  int          `json:"round"`
	RPS    float64      `json:"rps"`
	P50ms  float64      `json:"p50_ms"`
	P99ms  float64      `json:"p99_ms"`
	CPU    float64      `json:"cpu_s"`
	Tests  []testResult `json:"tests"`
	// Wall is how long the load ran, ClientCPU what the load generator
	// used meanwhile (so ClientCPU/Wall near 1 is a client that was the
	// bottleneck), Switches the server's context switches in that time.
	Wall      float64 `json:"wall_s,omitempty"`
	ClientCPU float64 `json:"client_cpu_s,omitempty"`
	Switches  uint64  `json:"switches,omitempty"`
}

// runPipeline runs p (pipelined) once against srv started with loops loops.
func runPipeline(binDir string, srv server, loops int, ld loader, p loadParams, round int) (pipeResult, error) {
	c, err := startServer(binDir, srv, loops)
	if err != nil {
		return pipeResult{}, err
	}
	defer c.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cpu0, err := procfs.CPU(c.Pid())
	if err != nil {
		return pipeResult{}, err
	}
	sw0, err := readSwitches(c.Pid())
	if err != nil {
		return pipeResult{}, err
	}
	cl0, t0 := clientCPU(), time.Now()
	res, err := ld.Run(ctx, c.Addr, p)
	if err != nil {
		return pipeResult{}, fmt.Errorf("%s -loops %d: %w", srv.Name, loops, err)
	}
	wall, cl := time.Since(t0), clientCPU()-cl0
	cpu, err := procfs.CPU(c.Pid())
	if err != nil {
		return pipeResult{}, err
	}
	sw, err := readSwitches(c.Pid())
	if err != nil {
		return pipeResult{}, err
	}
	r := pipeResult{Server: srv.Name, Loops: loops, Round: round, CPU: (cpu - cpu0).Seconds(), Tests: res,
		Wall: wall.Seconds(), ClientCPU: cl.Seconds(), Switches: sw - sw0}
	r.RPS, r.P50ms, r.P99ms = summarize(res)
	return r, nil
}
