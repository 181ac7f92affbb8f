package main

import (
	"context"
	"fmt"
	"time"
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
	res, err := ld.Run(ctx, c.Addr, p)
	if err != nil {
		return pipeResult{}, fmt.Errorf("%s -loops %d: %w", srv.Name, loops, err)
	}
	cpu, err := readCPU(c.Pid())
	if err != nil {
		return pipeResult{}, err
	}
	r := pipeResult{Server: srv.Name, Loops: loops, Round: round, CPU: cpu.Seconds(), Tests: res}
	r.RPS, r.P50ms, r.P99ms = summarize(res)
	return r, nil
}
