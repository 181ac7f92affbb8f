//go:build linux || freebsd

package poller

import "golang.org/x/sys/unix"

// pollRDHUP is the poll(2) flag for "the peer closed its end or shut down
// writing", which poll reports only when asked for. The poll backend asks
// for it with Read.
const pollRDHUP = unix.POLLRDHUP
