package poller

// OpenFDs lets the external tests (package poller_test) count open fds with
// the same helper as the internal ones.
var OpenFDs = openFDs

// CloseIdleParkers closes the idle parkers of waits that parked in the
// netpoller, so that the external tests can count fds.
var CloseIdleParkers = closeIdleParkers

// WaitOnThread makes l's blocking waits block its thread in the backend's
// wait, as they do where parking in the netpoller is not possible, so that
// the tests cover that path on epoll too. l must not be running.
func WaitOnThread(l *Loop) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.park != nil {
		l.park.close()
		l.park = nil
	}
}
