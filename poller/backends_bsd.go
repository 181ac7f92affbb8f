//go:build darwin || freebsd

package poller

const defaultBackend = BackendPoll

var platformBackends = []Backend{BackendPoll, BackendSelect}
