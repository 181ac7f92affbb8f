package main

import "runtime/metrics"

// gcCounts are the runtime's cycle counters, read from runtime/metrics:
// unlike runtime.ReadMemStats, reading them does not stop the world, so
// sampling them does not disturb what is measured.
type gcCounts struct {
	total  uint64 // /gc/cycles/total:gc-cycles
	forced uint64 // /gc/cycles/forced:gc-cycles: runtime.GC and friends
}

var gcSampleNames = [...]string{
	"/gc/cycles/total:gc-cycles",
	"/gc/cycles/forced:gc-cycles",
}

// readGCCounts reads the counters. A metric this runtime does not know reads
// as zero.
func readGCCounts() gcCounts {
	var s [len(gcSampleNames)]metrics.Sample
	for i, name := range gcSampleNames {
		s[i].Name = name
	}
	metrics.Read(s[:])
	value := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	return gcCounts{total: value(0), forced: value(1)}
}

// sub returns the cycles between an earlier reading and c.
func (c gcCounts) sub(earlier gcCounts) gcCounts {
	return gcCounts{total: c.total - earlier.total, forced: c.forced - earlier.forced}
}
