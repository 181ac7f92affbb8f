//go:build darwin || freebsd

package poller

// faultEpoll does nothing: there is no epoll here.
func faultEpoll(s, real *sysTable, fault func() error) {}
