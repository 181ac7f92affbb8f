//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package rss

import (
	"errors"
	"fmt"
)

func peak() (uint64, error) {
	return 0, fmt.Errorf("rss: peak resident set size: %w", errors.ErrUnsupported)
}

func current() (uint64, error) {
	return 0, fmt.Errorf("rss: current resident set size: %w", errors.ErrUnsupported)
}

func split() (anon, file uint64, err error) {
	return 0, 0, fmt.Errorf("rss: resident anonymous and file-backed memory: %w", errors.ErrUnsupported)
}
