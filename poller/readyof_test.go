package poller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

func TestReadyOf(t *testing.T) {
	cases := []struct {
		name   string
		list   []int
		ready  []int
		want   []int
		shared bool // the result is part of list
	}{
		{"none", []int{3, 4}, nil, nil, false},
		{"empty list", nil, nil, nil, false},
		{"one", []int{3}, []int{3}, []int{3}, true},
		{"all", []int{3, 4, 5}, []int{3, 4, 5}, []int{3, 4, 5}, true},
		{"a run in the middle", []int{3, 4, 5, 6}, []int{4, 5}, []int{4, 5}, true},
		{"a gap", []int{3, 4, 5}, []int{3, 5}, []int{3, 5}, false},
		{"a gap, then more", []int{3, 4, 5, 6, 7}, []int{3, 5, 7}, []int{3, 5, 7}, false},
		{"duplicates once", []int{3, 3, 4}, []int{3, 4}, []int{3, 4}, false},
		{"a duplicate after the run", []int{3, 4, 3}, []int{3, 4}, []int{3, 4}, true},
		{"order of the list", []int{5, 3}, []int{3, 5}, []int{5, 3}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var set unix.FdSet
			for _, fd := range c.ready {
				set.Set(fd)
			}
			list := append([]int(nil), c.list...)
			got := readyOf(list, &set)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.list, list, "the list is not changed")
			if len(got) == 0 {
				return
			}
			shared := false
			for i := range list {
				shared = shared || &list[i] == &got[0]
			}
			assert.Equal(t, c.shared, shared, "result shares the list's memory")
			if shared {
				assert.Equal(t, len(got), cap(got), "capacity capped, so that an append copies")
			}
		})
	}
}
