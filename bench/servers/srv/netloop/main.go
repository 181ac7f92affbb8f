// Command netloop is the comparison's RESP server on idlemux's netloop:
// netloop's default loops with -loops 0 (one per four Ps, at least one),
// or -loops N, all sharing one gcstep.Runtime when -stepper=on.
package main

import (
	"flag"
	"fmt"

	"github.com/idlemux/idlemux/bench/servers/internal/serve"
	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/netloop"
	"github.com/idlemux/idlemux/poller"
)

func main() {
	stepper := flag.Bool("stepper", true, "collect garbage while the loops are idle")
	reusePort := flag.Bool("reuseport", false, "a listening socket per loop (SO_REUSEPORT) instead of one acceptor handing connections out in turn")
	netpoller := flag.Bool("netpoller", false, "loops wait parked in Go's netpoller (false, netloop's default: blocked in epoll_wait on their threads)")
	cfg := serve.Parse()
	store := cfg.Store()
	opts := []netloop.Option{netloop.WithReusePort(*reusePort),
		netloop.WithLoopOptions(poller.WithNetpoller(*netpoller))}
	if cfg.Loops > 0 {
		opts = append(opts, netloop.WithLoops(cfg.Loops))
	}
	var rt *gcstep.Runtime
	if *stepper {
		rt = gcstep.NewRuntime()
		opts = append(opts, netloop.WithStepper(rt))
	}
	srv, err := netloop.Listen("tcp", cfg.Addr, netloop.HandlerFuncs{Data: func(c *netloop.Conn) {
		var n int
		var quit bool
		c.AppendOutput(func(out []byte) []byte {
			out, n, quit = store.Serve(out, c.Peek(), serve.ReplyLimit)
			return out
		})
		c.Discard(n)
		if quit {
			c.Close()
		}
	}}, opts...)
	if err != nil {
		serve.Fatalf("netloop: %v", err)
	}
	go srv.Serve()
	serve.Ready()
	serve.Wait()
	st := srv.Stats()
	extra := []string{fmt.Sprintf("accepted=%d", st.Accepted), fmt.Sprintf("pauses=%d", st.Pauses)}
	if rt != nil {
		gs := rt.Stats()
		extra = append(extra, fmt.Sprintf("inline=%d", gs.CyclesInline), fmt.Sprintf("declined-budget=%d", gs.DeclinedBudget),
			fmt.Sprintf("releases=%d", gs.Releases), fmt.Sprintf("step-ms=%d", gs.StepTime.Milliseconds()))
	}
	serve.Exit(store.Commands(), len(st.Loops), extra...)
}
