package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// appendCommand appends args as a RESP multibulk request, the form
// redis-benchmark and redis-cli send.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// reply is one RESP reply as the client sees it: its type byte ('+', '-',
// ':', '$' or '*'), the line of a simple reply, the length of a bulk reply
// (-1 for nil) or the elements of an array.
type reply struct {
	Kind  byte
	Line  string
	Len   int
	Bulk  []byte // only when read with keep
	Elems []reply
}

// errProtocol says a server sent something that is not RESP.
var errProtocol = errors.New("protocol error")

// readReply reads one reply from r. Bulk contents are kept only if keep is
// set (the load generator only checks their length).
func readReply(r *bufio.Reader, keep bool) (reply, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return reply{}, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return reply{}, fmt.Errorf("%w: line %q", errProtocol, line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-', ':':
		return reply{Kind: kind, Line: string(body)}, nil
	case '$':
		n, err := strconv.Atoi(string(body))
		if err != nil || n < -1 {
			return reply{}, fmt.Errorf("%w: bulk length %q", errProtocol, body)
		}
		rep := reply{Kind: kind, Len: n}
		if n < 0 {
			return rep, nil
		}
		if keep {
			rep.Bulk = make([]byte, n+2)
			if _, err := io.ReadFull(r, rep.Bulk); err != nil {
				return reply{}, err
			}
			rep.Bulk = rep.Bulk[:n]
		} else if _, err := r.Discard(n + 2); err != nil {
			return reply{}, err
		}
		return rep, nil
	case '*':
		n, err := strconv.Atoi(string(body))
		if err != nil || n < -1 {
			return reply{}, fmt.Errorf("%w: array length %q", errProtocol, body)
		}
		rep := reply{Kind: kind, Len: n}
		for range max(n, 0) {
			e, err := readReply(r, keep)
			if err != nil {
				return reply{}, err
			}
			rep.Elems = append(rep.Elems, e)
		}
		return rep, nil
	}
	return reply{}, fmt.Errorf("%w: reply type %q", errProtocol, kind)
}
