// Package resp is the part of a Redis-protocol (RESP) key-value server that
// does not depend on how connections are served: a parser for inline and
// multibulk commands, reply encoders, and a Store that executes PING, ECHO,
// SET, GET, DEL, DBSIZE, CONFIG GET, COMMAND and QUIT.
//
// It exists so that servers built on different network libraries (the
// example in examples/kv on netloop, and the comparison servers in
// bench/servers) run exactly the same command code, and differ only in
// their network plumbing.
//
// Everything works on byte slices and appends to a caller's buffer, so a
// server that reuses its buffers allocates only what the store keeps.
package resp
