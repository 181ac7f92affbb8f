package lab

import (
	"bufio"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
)

// A decisionLog records the stepper's decisions (gcstep.WithDecisions) in
// memory mapped outside the Go heap: recording them makes no garbage and
// does not grow the live heap, whose size the pacer's goal follows, so the
// run collects as it would without the log. The pages it touches count in
// the run's RSS, about a hundred bytes a decision. A gcstep.Decision holds
// no pointers (TestDecisionHoldsNoPointers), so memory the collector does
// not scan may keep it.
type decisionLog struct {
	mem     []byte
	d       []gcstep.Decision
	dropped int
}

// newDecisionLog maps room for n decisions.
func newDecisionLog(n int) (*decisionLog, error) {
	size := n * int(unsafe.Sizeof(gcstep.Decision{}))
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	d := unsafe.Slice((*gcstep.Decision)(unsafe.Pointer(&mem[0])), n)
	return &decisionLog{mem: mem, d: d[:0]}, nil
}

// record keeps d, or counts it as dropped once the log is full.
func (l *decisionLog) record(d gcstep.Decision) {
	if len(l.d) < cap(l.d) {
		l.d = append(l.d, d)
		return
	}
	l.dropped++
}

// decisionHeader names the columns write writes, gcstep.Decision's
// fields: at in milliseconds, the other times in microseconds, sizes in
// bytes. tokens_us, the budget left before the action, may be negative.
const decisionHeader = "at_ms\tbudget_us\toutcome\tgarbage\tlive\tpile\tgap_us\twall_us\tcost_us\tpacer_us\tchurn_us\ttokens_us\tsince_us"

// write writes the decisions to path, one tab-separated line each under
// decisionHeader, and a last comment line if any were dropped.
func (l *decisionLog) write(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, decisionHeader)
	for _, d := range l.d {
		fmt.Fprintf(w, "%.3f\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n",
			float64(d.At.Microseconds())/1000, d.Budget.Microseconds(), d.Outcome,
			d.Garbage, d.Live, d.Pile,
			d.Gap.Microseconds(), d.Wall.Microseconds(), d.Cost.Microseconds(),
			d.Pacer.Microseconds(), d.Churn.Microseconds(), d.Tokens.Microseconds(), d.Since.Microseconds())
	}
	if l.dropped > 0 {
		fmt.Fprintf(w, "# dropped %d decisions: the log was full\n", l.dropped)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// close unmaps the log.
func (l *decisionLog) close() {
	l.d = nil
	unix.Munmap(l.mem)
}
