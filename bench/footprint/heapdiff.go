package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/google/pprof/profile"
)

// heapDiff compares the heap profiles taken at peak RSS without and with
// idle stepping: in-use bytes by allocating function, largest differences
// first.
type heapDiff struct {
	Workload string      `json:"workload"`
	OffTotal int64       `json:"off_inuse_bytes"`
	OnTotal  int64       `json:"runtime_inuse_bytes"`
	Top      []funcInUse `json:"top"`
	Files    [2]string   `json:"profiles"`
	Note     string      `json:"note"`
}

// funcInUse is one function's in-use bytes in both profiles.
type funcInUse struct {
	Function string `json:"function"`
	Off      int64  `json:"off_bytes"`
	On       int64  `json:"runtime_bytes"`
	Diff     int64  `json:"diff_bytes"` // Off - On: what stepping saved
}

// inUseByFunction reads a heap profile and sums inuse_space by the
// function that allocated (the leaf frame), as pprof's top does for flat.
func inUseByFunction(path string) (map[string]int64, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, 0, fmt.Errorf("%s: no inuse_space in the profile", path)
	}
	by := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		if v == 0 {
			continue
		}
		name := "(unknown)"
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil {
			name = s.Location[0].Line[0].Function.Name
		}
		if measuring(s) {
			name = measurement
		}
		by[name] += v
		total += v
	}
	return by, total, nil
}

// measurement names the bucket for what the lab's own sampling and
// profiling allocated in the child.
const measurement = "(the lab's sampler and profiler)"

// measuring reports whether a sample was allocated by the sampler or by
// the heap profiler itself rather than by the workload.
func measuring(s *profile.Sample) bool {
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function == nil {
				continue
			}
			n := ln.Function.Name
			if strings.HasPrefix(n, "runtime/pprof.") || strings.Contains(n, "/internal/lab.(*sampler)") ||
				strings.Contains(n, "/internal/lab.startSampler") {
				return true
			}
		}
	}
	return false
}

func diffHeapProfiles(workload, offPath, onPath string, top int) (heapDiff, error) {
	off, offTotal, err := inUseByFunction(offPath)
	if err != nil {
		return heapDiff{}, err
	}
	on, onTotal, err := inUseByFunction(onPath)
	if err != nil {
		return heapDiff{}, err
	}
	d := heapDiff{Workload: workload, OffTotal: offTotal, OnTotal: onTotal, Files: [2]string{filepath.Base(offPath), filepath.Base(onPath)},
		Note: "Go heap profiles describe the heap as of the last completed GC cycle before the peak RSS was seen"}
	for fn, v := range off {
		d.Top = append(d.Top, funcInUse{fn, v, on[fn], v - on[fn]})
	}
	for fn, v := range on {
		if _, ok := off[fn]; !ok {
			d.Top = append(d.Top, funcInUse{fn, 0, v, -v})
		}
	}
	slices.SortFunc(d.Top, func(a, b funcInUse) int {
		return cmp.Or(cmp.Compare(abs(b.Diff), abs(a.Diff)), cmp.Compare(a.Function, b.Function))
	})
	if len(d.Top) > top {
		d.Top = d.Top[:top]
	}
	return d, nil
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func writeHeapDiff(w io.Writer, d heapDiff) {
	fmt.Fprintf(w, "%s: in-use heap at peak RSS by allocating function, GOGC=100, stepping off vs runtime\n", d.Workload)
	fmt.Fprintf(w, "(%s)\n\n", d.Note)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "off\truntime\toff-runtime\tfunction")
	fmt.Fprintf(tw, "%.2f MiB\t%.2f MiB\t%+.2f MiB\t(total)\n", mibs(d.OffTotal), mibs(d.OnTotal), mibs(d.OffTotal-d.OnTotal))
	for _, f := range d.Top {
		fn := strings.TrimPrefix(f.Function, "github.com/idlemux/idlemux/")
		fmt.Fprintf(tw, "%.2f MiB\t%.2f MiB\t%+.2f MiB\t%s\n", mibs(f.Off), mibs(f.On), mibs(f.Diff), fn)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func mibs(b int64) float64 { return float64(b) / (1 << 20) }
