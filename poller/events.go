package poller

import "strings"

// Events is a set of readiness conditions of one fd: what a caller waits for
// (Read, Write, Priority) and what the kernel reports (the same, plus Hangup,
// Error and Invalid, which are always reported and need not be asked for).
type Events uint16

const (
	// Read: data to read, or end of file (POLLIN, EPOLLIN, the read set).
	Read Events = 1 << iota
	// Write: room to write (POLLOUT, EPOLLOUT, the write set).
	Write
	// Priority: urgent data, such as TCP out-of-band bytes (POLLPRI,
	// EPOLLPRI, select's exceptional set).
	Priority
	// Hangup: the peer closed its end. What each backend sees:
	//
	//   - epoll: EPOLLHUP (nothing more will come: a pipe's read end once
	//     every writer is closed, a socket shut down both ways), reported
	//     whatever is watched; and EPOLLRDHUP (a stream socket's peer closed its end or
	//     shut down writing, ours still open), asked for with Read and
	//     reported only while Read is watched, together with Read.
	//   - poll: POLLHUP likewise; and POLLRDHUP as EPOLLRDHUP on Linux and
	//     freebsd. darwin has no POLLRDHUP: a socket whose peer closed its
	//     end is reported Read only.
	//   - select: never. A hangup shows as Read, and the read returns 0.
	//
	// Mux.WaitFD reports the same as the poll backend (select's when its
	// backend is select).
	//
	// The Loop is level-triggered: a handler that ignores Hangup is called
	// again at the next wait. On Hangup, read to EOF and Remove the fd (a
	// half-closed socket may also just stop watching Read, with Modify, and
	// keep writing); a full hangup is reported until the fd is removed.
	Hangup
	// Error: an error condition is pending on the fd (POLLERR, EPOLLERR),
	// such as the write end of a pipe whose read end is closed.
	Error
	// Invalid: the fd is not open (POLLNVAL; with select(2), an EBADF found
	// by probing each fd). A Loop drops an fd reported Invalid just before
	// calling its handler with Invalid, once, so a closed fd never makes
	// the loop spin; Mux.WaitFD returns Invalid with a nil error at once;
	// Mux.Poll reports POLLNVAL in Revents, as poll(2) does. Epoll never
	// reports it: the kernel forgets a closed fd by itself.
	Invalid
)

// waitable is what a caller may ask for; the rest is always reported.
const waitable = Read | Write | Priority

var eventNames = [...]string{"Read", "Write", "Priority", "Hangup", "Error", "Invalid"}

// String returns the set as names joined by "|", such as "Read|Hangup", or
// "0" for the empty set.
func (e Events) String() string {
	if e == 0 {
		return "0"
	}
	var b strings.Builder
	for i, name := range eventNames {
		if e&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	if rest := e &^ (1<<len(eventNames) - 1); rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString("0x")
		const hex = "0123456789abcdef"
		var buf [4]byte
		for i := range buf {
			buf[3-i] = hex[rest>>(4*i)&0xf]
		}
		b.Write(buf[:])
	}
	return b.String()
}
