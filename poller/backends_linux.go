package poller

const defaultBackend = BackendEpoll

var platformBackends = []Backend{BackendEpoll, BackendPoll, BackendSelect}
