package httpidle_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/httpidle"
)

// serveIdle serves srv on ln until ctx ends, and empties the gaps between
// its bursts of requests.
func serveIdle(ctx context.Context, srv *http.Server, ln net.Listener) error {
	rt := gcstep.NewRuntime() // one per process: netloop servers may share it
	defer rt.Close()
	work := rt.Work()
	defer work.Close() // runs first, once Shutdown has waited for the requests
	srv.Handler = httpidle.Handler(work, srv.Handler)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err // it failed before it was asked to stop
	case <-ctx.Done():
	}
	err := srv.Shutdown(context.Background()) // waits for the requests in flight
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// An existing server gets idle GC from a Runtime, a Work and one wrapped
// handler.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveIdle(ctx, srv, ln) }()

	c := &http.Client{Transport: &http.Transport{}}
	resp, err := c.Get("http://" + ln.Addr().String())
	if err != nil {
		fmt.Println(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(string(body))
	}
	c.CloseIdleConnections()
	stop()
	fmt.Println("stopped:", <-done)
	// Output:
	// hello
	// stopped: <nil>
}
