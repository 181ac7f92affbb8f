package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/poller"
)

// A result is what one run measured. Its JSON form is one line of -json
// output and also how a child process reports to its parent.
type result struct {
	Mode           mode    `json:"mode"`
	GOGC           string  `json:"gogc"` // a percentage or "off", as in $GOGC
	GOMAXPROCS     int     `json:"gomaxprocs"`
	Run            int     `json:"run"` // 1-based; 0 for a median
	PeakRSSBytes   uint64  `json:"peak_rss_bytes"`
	WallSeconds    float64 `json:"wall_seconds"`
	CPUSeconds     float64 `json:"cpu_seconds"` // user and system, the whole process
	GCCycles       uint64  `json:"gc_cycles"`
	ForcedGCCycles uint64  `json:"forced_gc_cycles"`  // started by runtime.GC
	StepperCycles  uint64  `json:"stepper_gc_cycles"` // run by the idle stepper
	IdleSteps      uint64  `json:"idle_steps"`        // Step calls by the loop
	Bytes          int64   `json:"bytes"`             // bytes read
	DigestOK       bool    `json:"digest_ok"`
	Digest         string  `json:"digest"` // SHA-256 of what was read, hex
	Readers        int     `json:"readers"`
	Chunk          int     `json:"chunk"`

	// BusyPercent is the share of one CPU another process was asked to
	// keep busy during the run (-busy), and BusyShare the share it
	// actually took (its CPU time over its lifetime), which is less when
	// the machine is busier still.
	BusyPercent int     `json:"busy_percent"`
	BusyShare   float64 `json:"busy_share"`

	// Loop is the poller modes' account from the loop (zero-timeout and
	// blocking polls, events, steps, system calls).
	Loop *poller.Stats `json:"loop,omitempty"`

	// Stepper is the idle mode's account from gcstep (cycles run, looks
	// declined, the budget earned and charged, time spent), for whoever
	// tunes the policy; durations are in nanoseconds.
	Stepper *gcstep.Stats `json:"stepper,omitempty"`
}

// writeJSONLine writes r as one line of JSON.
func writeJSONLine(w io.Writer, r result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding a result: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
