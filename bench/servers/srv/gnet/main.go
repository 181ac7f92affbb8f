// Command gnet is the comparison's RESP server on gnet v2: one event loop
// per core with -loops 0 (gnet's multicore mode), or -loops N.
package main

import (
	"runtime"
	"sync"

	"github.com/idlemux/idlemux/bench/servers/internal/serve"
	"github.com/idlemux/idlemux/examples/kv/resp"
	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
)

type handler struct {
	gnet.BuiltinEventEngine
	store *resp.Store
	out   sync.Pool // reply scratch; gnet copies what the socket does not take
}

func (h *handler) OnBoot(gnet.Engine) gnet.Action {
	serve.Ready()
	return gnet.None
}

func (h *handler) OnTraffic(c gnet.Conn) gnet.Action {
	in, _ := c.Peek(-1)
	bp := h.out.Get().(*[]byte)
	out, n, quit := h.store.Serve((*bp)[:0], in, 0) // gnet cannot stop reading: no limit
	if n > 0 {                                      // Discard(0) would discard everything, a half-received command too
		c.Discard(n)
	}
	if len(out) > 0 {
		c.Write(out)
	}
	*bp = out
	h.out.Put(bp)
	if quit {
		return gnet.Close
	}
	return gnet.None
}

func main() {
	cfg := serve.Parse()
	h := &handler{store: cfg.Store()}
	h.out.New = func() any { return new([]byte) }
	opts := []gnet.Option{gnet.WithMulticore(true), gnet.WithLogLevel(logging.ErrorLevel)}
	if cfg.Loops > 0 {
		opts = append(opts, gnet.WithNumEventLoop(cfg.Loops))
	}
	go func() {
		if err := gnet.Run(h, "tcp://"+cfg.Addr, opts...); err != nil {
			serve.Fatalf("gnet: %v", err)
		}
	}()
	serve.Wait()
	// gnet's multicore mode runs a loop per CPU unless told how many.
	loops := runtime.NumCPU()
	if cfg.Loops > 0 {
		loops = cfg.Loops
	}
	serve.Exit(h.store.Commands(), loops)
}
