package resp

import (
	"bytes"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

// shards splits the Store's map so that loops on different cores rarely
// wait for the same mutex.
const shards = 16

// A Store is an in-memory key-value map that executes RESP commands. It is
// safe for concurrent use; the zero value is an empty store.
type Store struct {
	// CopyValues makes every SET copy its value into new memory, even
	// over a value of about its size (see Set), so that each overwrite
	// leaves the old value to the collector: what a store must do that
	// lets readers keep values outside its lock, and a stand-in for a
	// server that allocates for every request. Set it before first use.
	CopyValues bool

	seed     maphash.Seed
	seedOnce sync.Once
	commands atomic.Uint64
	shard    [shards]shard
}

type shard struct {
	mu sync.RWMutex
	m  map[string][]byte // guarded by mu; nil until the first SET
	_  [40]byte          // keeps neighbours off each other's cache line
}

func (s *Store) shardOf(key []byte) *shard {
	s.seedOnce.Do(func() { s.seed = maphash.MakeSeed() })
	return &s.shard[maphash.Bytes(s.seed, key)%shards]
}

// Set stores a copy of value under key. A value replacing one of about
// its size is copied over the old one's bytes, in place, rather than into
// new memory: a server overwriting its keys then makes no garbage at all,
// where a fresh copy per SET would make the old value garbage each time
// (and the collector's heap goal, twice the live store, the server's
// footprint). Readers copy values out under the shard's read lock, so none
// sees a value change under it.
func (s *Store) Set(key, value []byte) {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old, ok := sh.m[string(key)]; ok && !s.CopyValues && reusable(old, len(value)) {
		sh.m[string(key)] = append(old[:0], value...)
		return
	}
	v := append([]byte(nil), value...)
	if sh.m == nil {
		sh.m = make(map[string][]byte)
	}
	sh.m[string(key)] = v
}

// reusable reports whether a value's memory can take a new value of n
// bytes: it must fit, and not waste more than half the memory it keeps
// (a small value does not keep a big one's bytes alive).
func reusable(old []byte, n int) bool {
	return n <= cap(old) && n >= cap(old)/2
}

// Get appends the value of key to dst as a bulk reply, or the null reply
// if there is none. (Appending under the shard's lock is what lets a SET
// replace a value without copying it for readers.)
func (s *Store) appendGet(dst, key []byte) []byte {
	sh := s.shardOf(key)
	sh.mu.RLock()
	v, ok := sh.m[string(key)]
	if ok {
		dst = AppendBulk(dst, v)
	}
	sh.mu.RUnlock()
	if !ok {
		dst = AppendNull(dst)
	}
	return dst
}

// Get returns a copy of the value stored under key, and whether there was
// one.
func (s *Store) Get(key []byte) ([]byte, bool) {
	sh := s.shardOf(key)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	v, ok := sh.m[string(key)]
	return append([]byte(nil), v...), ok
}

// Del removes key and reports whether it was there.
func (s *Store) Del(key []byte) bool {
	sh := s.shardOf(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := sh.m[string(key)]
	delete(sh.m, string(key))
	return ok
}

// Len returns the number of keys.
func (s *Store) Len() int {
	n := 0
	for i := range s.shard {
		sh := &s.shard[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

// Commands returns how many commands Do and Serve have executed.
func (s *Store) Commands() uint64 { return s.commands.Load() }

// Serve executes the whole commands at the start of in, appending their
// replies to dst, and returns the extended dst and how many bytes of in it
// consumed. It stops when in holds no whole command, when dst reaches limit
// bytes (limit <= 0: no limit; a server uses it to stop producing output for
// a peer that does not read it), or when the connection must be closed:
// after QUIT, or after input that is not RESP (answered with an error
// reply first). Then quit is true, and the server should write out and
// close.
func (s *Store) Serve(dst, in []byte, limit int) (out []byte, n int, quit bool) {
	var buf [8][]byte
	args := buf[:0]
	done := uint64(0)
	for limit <= 0 || len(dst) < limit {
		var k int
		var err error
		args, k, err = Parse(in[n:], args)
		if err != nil {
			// Redis's wording: "ERR Protocol error: ...".
			dst = AppendError(dst, "ERR Protocol error"+strings.TrimPrefix(err.Error(), ErrProtocol.Error()))
			quit = true
			break
		}
		if k == 0 {
			break
		}
		n += k
		if len(args) == 0 {
			continue
		}
		done++
		if dst, quit = s.do(dst, args); quit {
			break
		}
	}
	s.commands.Add(done)
	return dst, n, quit
}

// Do executes one command, appends its reply to dst and returns the
// extended dst, and quit == true if the connection must be closed once the
// reply is written (QUIT).
func (s *Store) Do(dst []byte, args [][]byte) (out []byte, quit bool) {
	if len(args) == 0 {
		return dst, false
	}
	s.commands.Add(1)
	return s.do(dst, args)
}

func (s *Store) do(dst []byte, args [][]byte) ([]byte, bool) {
	name := args[0]
	is := func(cmd string) bool { return bytes.EqualFold(name, []byte(cmd)) }
	argc := func(min, max int) bool { return len(args) >= min && (max < 0 || len(args) <= max) }
	switch {
	case is("GET"):
		if !argc(2, 2) {
			return wrongArgs(dst, name), false
		}
		return s.appendGet(dst, args[1]), false
	case is("SET"):
		if !argc(3, -1) {
			return wrongArgs(dst, name), false
		}
		if len(args) > 3 {
			return AppendError(dst, "ERR syntax error"), false
		}
		s.Set(args[1], args[2])
		return AppendSimple(dst, "OK"), false
	case is("PING"):
		switch len(args) {
		case 1:
			return AppendSimple(dst, "PONG"), false
		case 2:
			return AppendBulk(dst, args[1]), false
		}
		return wrongArgs(dst, name), false
	case is("ECHO"):
		if !argc(2, 2) {
			return wrongArgs(dst, name), false
		}
		return AppendBulk(dst, args[1]), false
	case is("DEL"):
		if !argc(2, -1) {
			return wrongArgs(dst, name), false
		}
		var n int64
		for _, k := range args[1:] {
			if s.Del(k) {
				n++
			}
		}
		return AppendInt(dst, n), false
	case is("DBSIZE"):
		if !argc(1, 1) {
			return wrongArgs(dst, name), false
		}
		return AppendInt(dst, int64(s.Len())), false
	case is("CONFIG"):
		if len(args) != 3 || !bytes.EqualFold(args[1], []byte("GET")) {
			return AppendError(dst, "ERR only CONFIG GET <parameter> is supported"), false
		}
		return appendConfig(dst, args[2]), false
	case is("COMMAND"):
		// redis-cli asks for COMMAND DOCS to offer hints: an empty
		// array says there are none.
		return AppendArray(dst, 0), false
	case is("QUIT"):
		return AppendSimple(dst, "OK"), true
	}
	msg := "ERR unknown command '" + clean(name) + "', with args beginning with: "
	for _, a := range args[1:min(len(args), 4)] {
		msg += "'" + clean(a) + "' "
	}
	return AppendError(dst, msg), false
}

// config is what CONFIG GET reports: the two parameters redis-benchmark
// asks for, with values that say "no persistence".
var config = [...][2]string{{"save", ""}, {"appendonly", "no"}}

func appendConfig(dst, pattern []byte) []byte {
	n := 0
	for _, kv := range config {
		if string(pattern) == "*" || bytes.EqualFold(pattern, []byte(kv[0])) {
			n++
		}
	}
	dst = AppendArray(dst, 2*n)
	for _, kv := range config {
		if string(pattern) == "*" || bytes.EqualFold(pattern, []byte(kv[0])) {
			dst = AppendBulkString(dst, kv[0])
			dst = AppendBulkString(dst, kv[1])
		}
	}
	return dst
}

func wrongArgs(dst, name []byte) []byte {
	return AppendError(dst, "ERR wrong number of arguments for '"+strings.ToLower(clean(name))+"' command")
}

// clean makes an argument safe to quote in an error line: at most 128
// bytes, CR and LF replaced by spaces.
func clean(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, string(b))
}
