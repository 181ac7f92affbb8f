package main

import (
	"hash"
	"strings"
	"testing"
	"time"
)

// measureWithin runs measure, failing the test if it takes more than a
// generous timeout: a hang is a bug, not a slow machine.
func measureWithin(t *testing.T, j job) (result, error) {
	t.Helper()
	type outcome struct {
		r   result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := measure(j, nil, "")
		done <- outcome{r, err}
	}()
	select {
	case o := <-done:
		return o.r, o.err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no result after 30s", j.mode)
		return result{}, nil
	}
}

func TestMeasure(t *testing.T) {
	for _, m := range knownModes {
		t.Run(string(m), func(t *testing.T) {
			r, err := measureWithin(t, job{mode: m, length: smallLen, readers: 4, chunk: 4096})
			if err != nil {
				t.Fatal(err)
			}
			if !r.DigestOK || r.Bytes != smallLen || r.Mode != m {
				t.Fatalf("got %+v, want mode %s, digest ok, %d bytes", r, m, smallLen)
			}
			if m != modeIdle && (r.IdleSteps != 0 || r.Stepper != nil) {
				t.Errorf("got %d idle steps, stepper %+v without a stepper, want none", r.IdleSteps, r.Stepper)
			}
			if hasLoop := m != modeGoroutines; hasLoop != (r.Loop != nil) || hasLoop && r.Loop.Events == 0 {
				t.Errorf("got loop stats %+v, want them (with events) exactly for the loop modes", r.Loop)
			}
			if m == modeIdle && (r.Stepper == nil || r.Stepper.Steps != r.IdleSteps) {
				t.Errorf("got %d idle steps, stepper %+v, want the stepper to count the same steps", r.IdleSteps, r.Stepper)
			}
		})
	}
}

// TestMeasureDetectsLoss runs a reader that drops one chunk: the digest
// check must notice.
func TestMeasureDetectsLoss(t *testing.T) {
	const lossy mode = "lossy"
	readFuncs[lossy] = func(p *pipe, j job, d *digest) (loopStats, error) {
		d.h = &dropFirstWrite{Hash: d.h}
		return readGoroutines(p, j, d)
	}
	defer delete(readFuncs, lossy)
	r, err := measureWithin(t, job{mode: lossy, length: smallLen, readers: 2, chunk: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.DigestOK {
		t.Fatalf("got digest ok after dropping bytes: %+v", r)
	}
}

func TestProgressLine(t *testing.T) {
	line := progressLine("idle 2/5", 50_000_000, 100_000_000, 2e9)
	for _, want := range []string{"\r", "idle 2/5", "50.0 MB / 100.0 MB", "25.0 MB/s", "\x1b[K"} {
		if !strings.Contains(line, want) {
			t.Errorf("got %q, want it to contain %q", line, want)
		}
	}
	if strings.Contains(line, "\n") {
		t.Errorf("got %q, want no newline", line)
	}
}

func TestProgressStopErases(t *testing.T) {
	var b strings.Builder // written only before stop returns
	stop := startProgress(&b, "off", 10, newDigest())
	stop()
	if got := b.String(); !strings.HasSuffix(got, "\r\x1b[K") {
		t.Fatalf("got %q, want it to end by erasing the line", got)
	}
}

// dropFirstWrite loses the first bytes written to it.
type dropFirstWrite struct {
	hash.Hash
	dropped bool
}

func (h *dropFirstWrite) Write(p []byte) (int, error) {
	if !h.dropped {
		h.dropped = true
		return len(p), nil
	}
	return h.Hash.Write(p)
}
