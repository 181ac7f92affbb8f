//go:build darwin || freebsd

package poller

// newPlatformBackend is never reached outside Linux: newBackend checks
// availability first, and only poll and select are available.
func newPlatformBackend(b Backend, c *counters) (backend, error) {
	panic("poller: unknown backend " + b.String())
}
