package poller

// pollRDHUP is zero: darwin's poll(2) has no flag for a peer that closed
// its end; such a socket is reported readable, and a read returns 0.
const pollRDHUP = 0
