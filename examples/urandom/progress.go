package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/idlemux/idlemux/internal/rss"
)

// progressEvery is how often the display is redrawn: often enough to look
// alive, rarely enough that drawing it costs nothing measurable.
const progressEvery = 250 * time.Millisecond

// progressOutput returns standard error if it is a terminal and nil if it is
// not: the display is for a person watching, never for a log.
func progressOutput() io.Writer {
	if term.IsTerminal(int(os.Stderr.Fd())) {
		return os.Stderr
	}
	return nil
}

// startProgress redraws one line on w, showing how far d has got towards
// total bytes, the rate so far and the current RSS, until stop is called;
// stop erases the line.
func startProgress(w io.Writer, label string, total int64, d *digest) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\x1b[K")
				return
			case now := <-t.C:
				fmt.Fprint(w, progressLine(label, d.n.Load(), total, now.Sub(start)))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// progressLine formats one redraw: carriage return, the text, and an erase
// to the end of the line.
func progressLine(label string, n, total int64, elapsed time.Duration) string {
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(n) / s
	}
	line := fmt.Sprintf("\r%s  %s / %s  %s/s", label, formatBytes(n), formatBytes(total), formatBytes(int64(rate)))
	if cur, err := rss.Current(); err == nil {
		line += "  rss " + formatMiB(cur)
	}
	return line + "\x1b[K"
}
