package lab

import (
	"runtime/metrics"
	"strings"

	"github.com/idlemux/idlemux/internal/rss"
)

// MemoryAtEnd is what the process's memory is made of at the end of a
// run: the runtime's own account (runtime/metrics, /memory/classes/...,
// bytes mapped and in use) and the kernel's (RssAnon and RssFile). A peak
// RSS is the heap's highest point plus all that is not heap, and most of
// what is not heap only grows: the collector's metadata, the code it ran.
// So the end of a run tells how much of a point's memory over the floor
// the collector's own structures and code are, and how much its heap.
type MemoryAtEnd struct {
	// Heap is the heap's memory: objects, free pages not returned to
	// the OS, and unused space in spans.
	Heap uint64 `json:"heap"`
	// Stacks are goroutine and system stacks.
	Stacks uint64 `json:"stacks"`
	// Metadata is the runtime's own structures: span and cache
	// metadata, the collector's work buffers and mark bits, heap arena
	// metadata.
	Metadata uint64 `json:"metadata"`
	// Other is profiling buckets and the rest.
	Other uint64 `json:"other"`
	// RSSAnon and RSSFile are the resident anonymous and file-backed
	// memory (RssAnon, RssFile): file-backed is the binary's and the
	// libraries' pages, the collector's code among them.
	RSSAnon uint64 `json:"rss_anon"`
	RSSFile uint64 `json:"rss_file"`
}

// Own is what collecting costs the process besides the heap it holds:
// the runtime's metadata and the resident file-backed pages.
func (m *MemoryAtEnd) Own() uint64 {
	if m == nil {
		return 0
	}
	return m.Metadata + m.RSSFile
}

// readMemoryAtEnd reads the process's memory now. It allocates; call it
// once the run's measurements are over.
func readMemoryAtEnd() *MemoryAtEnd {
	var s []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") && d.Kind == metrics.KindUint64 {
			s = append(s, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(s)
	var m MemoryAtEnd
	for _, x := range s {
		if f := m.class(x.Name); f != nil && x.Value.Kind() == metrics.KindUint64 {
			*f += x.Value.Uint64()
		}
	}
	if anon, file, err := rss.Split(); err == nil {
		m.RSSAnon, m.RSSFile = anon, file
	}
	return &m
}

// class is the field a /memory/classes metric adds to, nil for the total
// and for memory returned to the OS.
func (m *MemoryAtEnd) class(name string) *uint64 {
	name = strings.TrimPrefix(name, "/memory/classes/")
	switch {
	case name == "heap/stacks:bytes" || name == "os-stacks:bytes":
		return &m.Stacks
	case name == "heap/released:bytes" || name == "total:bytes":
		return nil
	case strings.HasPrefix(name, "heap/"):
		return &m.Heap
	case strings.HasPrefix(name, "metadata/"):
		return &m.Metadata
	}
	return &m.Other
}
