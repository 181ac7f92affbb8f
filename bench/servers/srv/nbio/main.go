// Command nbio is the comparison's RESP server on nbio: one poller per core
// with -loops 0 (nbio's default), or -loops N.
package main

import (
	"sync"

	"github.com/idlemux/idlemux/bench/servers/internal/serve"
	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/logging"
)

// conn holds the part of a command that has not arrived whole yet; nbio
// hands each read over as it came.
type conn struct{ pending []byte }

func main() {
	cfg := serve.Parse()
	logging.SetLevel(logging.LevelError)
	store := cfg.Store()
	scratch := sync.Pool{New: func() any { return new([]byte) }}
	engine := nbio.NewEngine(nbio.Config{Network: "tcp", Addrs: []string{cfg.Addr}, NPoller: cfg.Loops})
	engine.OnOpen(func(c *nbio.Conn) { c.SetSession(&conn{}) })
	engine.OnData(func(c *nbio.Conn, data []byte) {
		st := c.Session().(*conn)
		in := data
		if len(st.pending) > 0 {
			st.pending = append(st.pending, data...)
			in = st.pending
		}
		bp := scratch.Get().(*[]byte)
		out, n, quit := store.Serve((*bp)[:0], in, 0) // nbio cannot stop reading: no limit
		if len(out) > 0 {
			c.Write(out)
		}
		*bp = out
		scratch.Put(bp)
		if rest := in[n:]; len(rest) == 0 {
			st.pending = nil
		} else {
			st.pending = append(st.pending[:0], rest...) // copy: rest may overlap pending, append copies forward
		}
		if quit {
			c.Close()
		}
	})
	if err := engine.Start(); err != nil {
		serve.Fatalf("nbio: %v", err)
	}
	serve.Ready()
	serve.Wait()
	serve.Exit(store.Commands(), engine.NPoller) // NewEngine filled in its default
}
