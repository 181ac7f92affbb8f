package gcstep

import (
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkWorkBeginEnd is what a request pays on the way in and out of
// httpidle.Handler, from as many goroutines as GOMAXPROCS, against the
// naive baseline: one atomic counter.
func BenchmarkWorkBeginEnd(b *testing.B) {
	b.Run("work", func(b *testing.B) {
		rt := NewRuntime()
		defer rt.Close()
		w := rt.Work()
		defer w.Close()
		w.Begin() // something stays in flight: no timer is armed per End
		defer w.End()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				w.Begin()
				w.End()
			}
		})
	})
	b.Run("atomic", func(b *testing.B) {
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n.Add(1)
				n.Add(-1)
			}
		})
	})
}

// BenchmarkLull is what a loop pays after every dispatch to ask whether
// a step could do anything.
func BenchmarkLull(b *testing.B) {
	benchLoop(b, func(l *Loop) {
		l.Waited(0, true)
		l.Lull()
	})
}

// BenchmarkStep is what a look costs a loop's idle moment when there is
// nothing to do: a reading of the runtime's metrics and of the process's
// CPU time, and the decision. A loop looks at most once a millisecond
// (lookEvery).
func BenchmarkStep(b *testing.B) {
	benchLoop(b, func(l *Loop) { l.Step(time.Millisecond) })
}

// benchLoop times each on a Loop of a Runtime of its own.
func benchLoop(b *testing.B, each func(l *Loop)) {
	rt := NewRuntime()
	defer rt.Close()
	l := rt.Loop()
	defer l.Close()
	b.ReportAllocs()
	for b.Loop() {
		each(l)
	}
}
