package gcstep

// nudgedGOGC is the GOGC a step sets for the moment it takes to start a
// cycle: low enough that the heap is over the runtime's trigger.
const nudgedGOGC = 1

// close records the value got that a debug.SetGCPercent call of the step
// returned, where the step expected ours (the value it had set itself):
// anything else was set by the program inside the window.
func (w *window) close(got, ours int) {
	if got == ours {
		return
	}
	if !w.kept {
		w.read = ours
	}
	w.kept, w.set = true, got
}

// A trap remembers a program call to debug.SetGCPercent that landed inside
// a step's window and so returned the step's value instead of the
// program's. A program that saves and restores GOGC would later put that
// value back, leaving GOGC at 1 % or off for good. While the trap is armed
// the Runtime watches GOGC at every step: if it reads the step's value,
// the program restored what it had read, and the Runtime puts back the
// program's value from before the window; any other change disarms it.
type trap struct {
	armed   bool
	set     int // what the program set inside the window
	read    int // what its call returned: the step's value
	restore int // the program's GOGC before the window
}

// arm sets the trap from a window, if the program set GOGC inside it.
func (t *trap) arm(w window) {
	if w.kept {
		*t = trap{armed: true, set: w.set, read: w.read, restore: w.before}
	}
}

// check looks at GOGC as read now and repairs it through set if the
// program put back the step's value. It reports whether it repaired.
func (t *trap) check(gogc int, set func(int) int) bool {
	if !t.armed || gogc == t.set {
		return false
	}
	t.armed = false
	if gogc != t.read {
		return false // the program moved on: its value stands
	}
	if got := set(t.restore); got != t.read {
		set(got) // the program changed it again meanwhile: keep that
		return false
	}
	return true
}
