package resp

import (
	"bytes"
	"errors"
	"fmt"
)

// Limits of the parser; input beyond them is a protocol error, as in Redis.
const (
	// MaxInline is the longest inline command line (64 KiB, Redis's own
	// limit): a peer that sends more without a newline is not speaking
	// RESP.
	MaxInline = 64 << 10
	// MaxArgs is the most arguments a multibulk command may declare.
	MaxArgs = 1 << 20
	// MaxBulk is the longest bulk argument (512 MiB, Redis's default
	// proto-max-bulk-len).
	MaxBulk = 512 << 20
)

// ErrProtocol is wrapped by every error Parse returns: the input is not
// RESP, and the connection should be answered with the error and closed.
var ErrProtocol = errors.New("resp: protocol error")

// Parse reads one command from the start of b, inline ("SET k v\r\n") or
// multibulk ("*3\r\n$3\r\nSET\r\n..."). It appends the arguments, as
// slices of b, to args[:0] and returns them with the number of bytes the
// command took.
//
// n == 0 with a nil error means b does not hold a whole command yet: keep
// the bytes and call again when more arrive. An empty line or an empty
// multibulk ("*0\r\n") is consumed (n > 0) with no arguments. The returned
// slices alias b: copy what must outlive it.
func Parse(b []byte, args [][]byte) (_ [][]byte, n int, err error) {
	args = args[:0]
	if len(b) == 0 {
		return args, 0, nil
	}
	if b[0] != '*' {
		return parseInline(b, args)
	}
	count, pos, ok, err := parseLen(b, 1, MaxArgs)
	if !ok || err != nil {
		return args, 0, err
	}
	for range count {
		if pos >= len(b) {
			return args, 0, nil
		}
		if b[pos] != '$' {
			return args, 0, fmt.Errorf("%w: expected '$', got '%c'", ErrProtocol, b[pos])
		}
		size, next, ok, err := parseLen(b, pos+1, MaxBulk)
		if !ok || err != nil {
			return args, 0, err
		}
		if size < 0 {
			return args, 0, fmt.Errorf("%w: invalid bulk length", ErrProtocol)
		}
		end := next + size
		if end+2 > len(b) {
			return args, 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return args, 0, fmt.Errorf("%w: bulk argument not followed by CRLF", ErrProtocol)
		}
		args = append(args, b[next:end])
		pos = end + 2
	}
	return args, pos, nil
}

// parseLen reads the decimal number that starts at b[i] and ends with CRLF,
// as in "*3\r\n" or "$5\r\n". It returns the number, the index after the
// CRLF, and ok == false if the line is not complete yet. A negative number
// reads as -1 (a null array or bulk).
func parseLen(b []byte, i, limit int) (v, next int, ok bool, err error) {
	nl := bytes.IndexByte(b[i:], '\n')
	if nl < 0 {
		if len(b)-i > 20 {
			return 0, 0, false, fmt.Errorf("%w: length line too long", ErrProtocol)
		}
		return 0, 0, false, nil
	}
	line := b[i : i+nl]
	if len(line) == 0 || line[len(line)-1] != '\r' {
		return 0, 0, false, fmt.Errorf("%w: length not followed by CRLF", ErrProtocol)
	}
	line = line[:len(line)-1]
	neg := len(line) > 0 && line[0] == '-'
	if neg {
		line = line[1:]
	}
	if len(line) == 0 || len(line) > 10 {
		return 0, 0, false, fmt.Errorf("%w: invalid length", ErrProtocol)
	}
	for _, c := range line {
		if c < '0' || c > '9' {
			return 0, 0, false, fmt.Errorf("%w: invalid length", ErrProtocol)
		}
		v = v*10 + int(c-'0')
	}
	if neg {
		v = -1
	}
	if v > limit {
		return 0, 0, false, fmt.Errorf("%w: length %d above %d", ErrProtocol, v, limit)
	}
	return v, i + nl + 1, true, nil
}

// parseInline splits one line at spaces and tabs. Redis also honours
// quotes in inline commands; this parser does not (redis-cli and
// redis-benchmark send multibulk).
func parseInline(b []byte, args [][]byte) ([][]byte, int, error) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		if len(b) > MaxInline {
			return args, 0, fmt.Errorf("%w: too big inline request", ErrProtocol)
		}
		return args, 0, nil
	}
	line := b[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	for len(line) > 0 {
		i := bytes.IndexAny(line, " \t")
		switch {
		case i < 0:
			args = append(args, line)
			line = nil
		case i > 0:
			args = append(args, line[:i])
			line = line[i+1:]
		default:
			line = line[1:]
		}
	}
	return args, nl + 1, nil
}
