package lab

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMemoryAtEnd(t *testing.T) {
	m := readMemoryAtEnd()
	assert.Positive(t, m.Heap, "heap")
	assert.Positive(t, m.Stacks, "stacks")
	assert.Positive(t, m.Metadata, "metadata")
	if runtime.GOOS == "linux" {
		assert.Positive(t, m.RSSAnon, "RssAnon")
		assert.Positive(t, m.RSSFile, "RssFile")
		assert.Equal(t, m.Metadata+m.RSSFile, m.Own())
	}
	assert.Zero(t, (*MemoryAtEnd)(nil).Own(), "a result from before the lab read it")
}

func TestMemoryClass(t *testing.T) {
	var m MemoryAtEnd
	for name, want := range map[string]*uint64{
		"/memory/classes/heap/objects:bytes":         &m.Heap,
		"/memory/classes/heap/free:bytes":            &m.Heap,
		"/memory/classes/heap/unused:bytes":          &m.Heap,
		"/memory/classes/heap/stacks:bytes":          &m.Stacks,
		"/memory/classes/os-stacks:bytes":            &m.Stacks,
		"/memory/classes/metadata/other:bytes":       &m.Metadata,
		"/memory/classes/metadata/mspan/inuse:bytes": &m.Metadata,
		"/memory/classes/profiling/buckets:bytes":    &m.Other,
		"/memory/classes/other:bytes":                &m.Other,
		"/memory/classes/heap/released:bytes":        nil,
		"/memory/classes/total:bytes":                nil,
	} {
		assert.Same(t, want, m.class(name), name)
	}
}
