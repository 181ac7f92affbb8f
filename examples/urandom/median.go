package main

import (
	"cmp"
	"slices"
)

// median returns the median of xs, the mean of the two middle values when
// there is an even number of them, and the zero value for none.
func median[T int64 | uint64 | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	lo, hi := s[mid-1], s[mid]
	return lo + (hi-lo)/2 // no overflow, and exact for floats
}

// summarize folds the runs of each mode into one result of medians, in the
// order of modes; a mode without runs is left out. The runs are expected to
// share one -busy level; BusyPercent is the first run's. Each field's median is
// taken on its own, so a summary row need not be any single run. DigestOK
// holds only if it held in every run, and Digest is kept only if every run
// read the same bytes (never, from /dev/urandom, unless there was one run).
func summarize(results []result, modes []mode) []result {
	var out []result
	for _, m := range modes {
		var runs []result
		for _, r := range results {
			if r.Mode == m {
				runs = append(runs, r)
			}
		}
		if len(runs) == 0 {
			continue
		}
		field := func(f func(result) uint64) uint64 { return median(mapRuns(runs, f)) }
		s := runs[0]
		s.Run = 0
		s.Loop, s.Stepper = nil, nil // one run's accounts, not medians
		s.PeakRSSBytes = field(func(r result) uint64 { return r.PeakRSSBytes })
		s.GCCycles = field(func(r result) uint64 { return r.GCCycles })
		s.ForcedGCCycles = field(func(r result) uint64 { return r.ForcedGCCycles })
		s.StepperCycles = field(func(r result) uint64 { return r.StepperCycles })
		s.IdleSteps = field(func(r result) uint64 { return r.IdleSteps })
		s.WallSeconds = median(mapRuns(runs, func(r result) float64 { return r.WallSeconds }))
		s.CPUSeconds = median(mapRuns(runs, func(r result) float64 { return r.CPUSeconds }))
		s.BusyShare = median(mapRuns(runs, func(r result) float64 { return r.BusyShare }))
		s.Bytes = median(mapRuns(runs, func(r result) int64 { return r.Bytes }))
		for _, r := range runs {
			s.DigestOK = s.DigestOK && r.DigestOK
			if r.Digest != s.Digest {
				s.Digest = ""
			}
		}
		out = append(out, s)
	}
	return out
}

func mapRuns[T cmp.Ordered](runs []result, f func(result) T) []T {
	out := make([]T, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}
