package poller

// OpenFDs lets the external tests (package poller_test) count open fds with
// the same helper as the internal ones.
var OpenFDs = openFDs
