package netloop

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/poller"
)

// listenBacklog is the backlog asked of listen(2); the kernel caps it at
// net.core.somaxconn.
const listenBacklog = 4096

// Accept backs off after a failure other than "nothing to accept" (EMFILE,
// ENFILE, ENOBUFS...): the connection stays in the backlog, so a
// level-triggered loop would report it at every wait and spin. The delay
// doubles from minBackoff to maxBackoff, as net/http's Serve does.
const (
	minBackoff = 5 * time.Millisecond
	maxBackoff = time.Second
	// acceptBatch bounds the connections accepted per readiness report,
	// so that a flood of new connections does not starve the others.
	acceptBatch = 64
)

// A listener is one listening socket.
type listener struct {
	fd      int
	addr    net.Addr
	unix    bool
	path    string       // a Unix socket's path, removed on close; "" if none
	keep    net.Listener // the listener given to NewServer, closed on close
	backoff time.Duration
	next    int // round-robin index of the loop for the next connection
	closed  bool
}

func (ln *listener) close() {
	if ln.closed {
		return
	}
	ln.closed = true
	unix.Close(ln.fd)
	if ln.path != "" && ln.path[0] != '@' {
		unix.Unlink(ln.path)
	}
	if ln.keep != nil {
		ln.keep.Close()
	}
}

// listen opens n listening sockets on one address (n > 1 with
// SO_REUSEPORT).
func listen(network, address string, n int, reusePort bool) (lns []*listener, err error) {
	defer func() {
		if err != nil {
			for _, ln := range lns {
				ln.close()
			}
			lns = nil
			err = &net.OpError{Op: "listen", Net: network, Err: err}
		}
	}()
	switch network {
	case "tcp", "tcp4", "tcp6":
		ta, err := net.ResolveTCPAddr(network, address)
		if err != nil {
			return nil, err
		}
		for i := range n {
			ln, err := listenTCP(network, ta, reusePort)
			if err != nil {
				return lns, err
			}
			lns = append(lns, ln)
			if i == 0 {
				// Port 0: the others take the port the first got.
				ta = ln.addr.(*net.TCPAddr)
			}
		}
		return lns, nil
	case "unix":
		ua, err := net.ResolveUnixAddr(network, address)
		if err != nil {
			return nil, err
		}
		ln, err := listenUnix(ua)
		if err != nil {
			return nil, err
		}
		return []*listener{ln}, nil
	}
	return nil, net.UnknownNetworkError(network)
}

func listenTCP(network string, ta *net.TCPAddr, reusePort bool) (*listener, error) {
	ip := ta.IP
	wildcard := ip == nil || ip.IsUnspecified()
	family := unix.AF_INET6
	switch {
	case network == "tcp4", network == "tcp" && ip.To4() != nil && !wildcard:
		family = unix.AF_INET
	case network == "tcp6" && ip.To4() != nil && !wildcard:
		return nil, &net.AddrError{Err: "non-IPv6 address", Addr: ta.String()}
	}
	if network == "tcp4" && ip != nil && ip.To4() == nil {
		return nil, &net.AddrError{Err: "non-IPv4 address", Addr: ta.String()}
	}
	fd, err := socket(family)
	if err != nil && family == unix.AF_INET6 && network == "tcp" && wildcard {
		family = unix.AF_INET // no IPv6 here: listen on IPv4 only
		fd, err = socket(family)
	}
	if err != nil {
		return nil, err
	}
	ln := &listener{fd: fd}
	var sa unix.Sockaddr
	if family == unix.AF_INET {
		s4 := &unix.SockaddrInet4{Port: ta.Port}
		if ip != nil {
			copy(s4.Addr[:], ip.To4())
		}
		sa = s4
	} else {
		s6 := &unix.SockaddrInet6{Port: ta.Port}
		if ip != nil && !wildcard {
			copy(s6.Addr[:], ip.To16())
			s6.ZoneId = zoneID(ta.Zone)
		}
		// "tcp" on a wildcard accepts IPv4 too, as package net does.
		v6only := 0
		if network == "tcp6" {
			v6only = 1
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only); err != nil {
			ln.close()
			return nil, os.NewSyscallError("setsockopt", err)
		}
		sa = s6
	}
	if err := bindListen(ln, sa, reusePort); err != nil {
		return nil, err
	}
	return ln, nil
}

func listenUnix(ua *net.UnixAddr) (*listener, error) {
	fd, err := socket(unix.AF_UNIX)
	if err != nil {
		return nil, err
	}
	ln := &listener{fd: fd, unix: true}
	if err := bindListen(ln, &unix.SockaddrUnix{Name: ua.Name}, false); err != nil {
		return nil, err
	}
	ln.path = ua.Name
	return ln, nil
}

// bindListen binds and listens ln.fd, and sets ln.addr; it closes ln on
// failure.
func bindListen(ln *listener, sa unix.Sockaddr, reusePort bool) error {
	fail := func(call string, err error) error {
		ln.close()
		return os.NewSyscallError(call, err)
	}
	if !ln.unix {
		// As package net: restart on a port in TIME_WAIT.
		if err := unix.SetsockoptInt(ln.fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fail("setsockopt", err)
		}
	}
	if reusePort {
		if err := unix.SetsockoptInt(ln.fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fail("setsockopt", err)
		}
	}
	if err := unix.Bind(ln.fd, sa); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(ln.fd, listenBacklog); err != nil {
		return fail("listen", err)
	}
	got, err := unix.Getsockname(ln.fd)
	if err != nil {
		return fail("getsockname", err)
	}
	ln.addr = sockaddrToAddr(got, ln.unix)
	return nil
}

// fromListener makes a listener of a dup of nl's fd, which Go already made
// non-blocking. The dup is the loop's own, so nl's own fd stays in Go's
// poller, unused.
func fromListener(nl net.Listener) (*listener, error) {
	sc, ok := nl.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrListener, nl)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("netloop: %w", err)
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(s uintptr) {
		fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, fmt.Errorf("netloop: %w", err)
	}
	if dupErr != nil {
		return nil, os.NewSyscallError("fcntl", dupErr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("getsockname", err)
	}
	_, isUnix := sa.(*unix.SockaddrUnix)
	return &listener{fd: fd, addr: nl.Addr(), unix: isUnix, keep: nl}, nil
}

// watch makes l accept on ln.
func (l *Loop) watch(ln *listener) error {
	if err := l.pl.Add(ln.fd, poller.Read, func(int, poller.Events) { l.accept(ln) }); err != nil {
		return err
	}
	l.lns = append(l.lns, ln)
	return nil
}

// accept accepts what ln has, up to acceptBatch connections.
func (l *Loop) accept(ln *listener) {
	for range acceptBatch {
		fd, sa, err := accept(ln.fd)
		switch err {
		case nil:
			ln.backoff = 0
			l.s.dispatch(l, fd, sa, ln)
			continue
		case unix.EAGAIN:
			return
		case unix.EINTR, unix.ECONNABORTED:
			// Interrupted, or a peer that gave up while in the backlog.
			continue
		}
		l.c.acceptErrors.Add(1)
		ln.backoff = min(max(2*ln.backoff, minBackoff), maxBackoff)
		if l.s.cfg.onAcceptError != nil {
			l.s.cfg.onAcceptError(fmt.Errorf("netloop: %w; retrying in %v", os.NewSyscallError("accept", err), ln.backoff))
		}
		if l.pl.Modify(ln.fd, 0) == nil {
			l.pl.AfterFunc(ln.backoff, func() {
				if !ln.closed {
					l.pl.Modify(ln.fd, poller.Read)
				}
			})
		}
		return
	}
}

func sockaddrToAddr(sa unix.Sockaddr, isUnix bool) net.Addr {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), sa.Addr[:]...)), Port: sa.Port}
	case *unix.SockaddrInet6:
		zone := ""
		if sa.ZoneId != 0 {
			zone = strconv.Itoa(int(sa.ZoneId))
			if ifi, err := net.InterfaceByIndex(int(sa.ZoneId)); err == nil {
				zone = ifi.Name
			}
		}
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), sa.Addr[:]...)), Port: sa.Port, Zone: zone}
	case *unix.SockaddrUnix:
		return &net.UnixAddr{Name: sa.Name, Net: "unix"}
	}
	if isUnix {
		// An unnamed peer (a socketpair or an unbound client).
		return &net.UnixAddr{Net: "unix"}
	}
	return nil
}

func zoneID(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	n, _ := strconv.Atoi(zone)
	return uint32(n)
}
