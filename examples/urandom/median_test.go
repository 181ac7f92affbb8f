package main

import (
	"math"
	"testing"

	"github.com/idlemux/idlemux/poller"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{3}, 3},
		{"odd", []float64{5, 1, 4, 2, 3}, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5},
		{"repeats", []float64{2, 2, 9}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := median(tt.in); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMedianDoesNotReorder(t *testing.T) {
	in := []int64{3, 1, 2}
	median(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Fatalf("got %v after median, want [3 1 2]", in)
	}
}

func TestMedianNoOverflow(t *testing.T) {
	in := []uint64{math.MaxUint64 - 2, math.MaxUint64}
	if got, want := median(in), uint64(math.MaxUint64-1); got != want {
		t.Fatalf("got %d, want %d", got, want)
	}
}

func TestSummarize(t *testing.T) {
	runs := []result{
		{Mode: modeOff, Run: 1, PeakRSSBytes: 10, WallSeconds: 1.0, CPUSeconds: 2, Loop: &poller.Stats{Steps: 1}, GCCycles: 5, IdleSteps: 0, Bytes: 100, DigestOK: true, Digest: "a"},
		{Mode: modeIdle, Run: 1, PeakRSSBytes: 4, WallSeconds: 1.2, GCCycles: 9, ForcedGCCycles: 3, StepperCycles: 7, IdleSteps: 70, Bytes: 100, DigestOK: true, Digest: "b"},
		{Mode: modeOff, Run: 2, PeakRSSBytes: 30, WallSeconds: 3.0, CPUSeconds: 4, GCCycles: 7, IdleSteps: 0, Bytes: 100, DigestOK: true, Digest: "c"},
		{Mode: modeIdle, Run: 2, PeakRSSBytes: 6, WallSeconds: 1.0, GCCycles: 11, ForcedGCCycles: 5, StepperCycles: 9, IdleSteps: 90, Bytes: 100, DigestOK: false, Digest: "d"},
		{Mode: modeOff, Run: 3, PeakRSSBytes: 20, WallSeconds: 2.0, CPUSeconds: 3, GCCycles: 6, IdleSteps: 0, Bytes: 100, DigestOK: true, Digest: "e"},
	}
	got := summarize(runs, []mode{modeIdle, modeGoroutines, modeOff})
	want := []result{
		{Mode: modeIdle, PeakRSSBytes: 5, WallSeconds: 1.1, GCCycles: 10, ForcedGCCycles: 4, StepperCycles: 8, IdleSteps: 80, Bytes: 100, DigestOK: false},
		{Mode: modeOff, PeakRSSBytes: 20, WallSeconds: 2.0, CPUSeconds: 3, GCCycles: 6, Bytes: 100, DigestOK: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if math.Abs(got[i].WallSeconds-want[i].WallSeconds) > 1e-9 {
			t.Errorf("row %d: got wall %v, want %v", i, got[i].WallSeconds, want[i].WallSeconds)
		}
		got[i].WallSeconds = want[i].WallSeconds
		if got[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestSummarizeKeepsASingleDigest(t *testing.T) {
	got := summarize([]result{{Mode: modeOff, Run: 1, DigestOK: true, Digest: "abc"}}, allModes)
	if len(got) != 1 || got[0].Digest != "abc" || !got[0].DigestOK {
		t.Fatalf("got %+v, want one row with digest abc, ok", got)
	}
}
