package poller

// OpenFDs lets the external tests (package poller_test) count open fds with
// the same helper as the internal ones.
var OpenFDs = openFDs

// CloseIdleParkers closes the idle parkers of waits that parked in the
// netpoller, so that the external tests can count fds.
var CloseIdleParkers = closeIdleParkers
