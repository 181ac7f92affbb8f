package httpidle_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"

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

// A server-sent events route under Streams: its handler pauses while it
// waits for the next message, so that open streams leave the server
// quiet between bursts, and resumes to write the message.
func ExamplePause() {
	rt := gcstep.NewRuntime()
	defer rt.Close()
	work := rt.Work()
	defer work.Close()

	messages := make(chan string) // closed: the stream ends
	events := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		if rc.Flush() != nil { // the headers: the client waits for them
			return
		}
		for {
			var msg string
			ok := false
			resume := httpidle.Pause(r.Context())
			select {
			case msg, ok = <-messages:
			case <-r.Context().Done():
			}
			resume()
			if !ok {
				return
			}
			fmt.Fprintf(w, "data: %s\n\n", msg)
			if rc.Flush() != nil {
				return
			}
		}
	})
	mux := http.NewServeMux()
	mux.Handle("/events", httpidle.Streams(work, events))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	resp, err := c.Get(srv.URL + "/events")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for _, m := range []string{"hello", "world"} {
		messages <- m
		for sc.Scan() && sc.Text() != "" {
			fmt.Println(sc.Text())
		}
	}
	fmt.Println("in flight, waiting:", work.InFlight())
	close(messages)
	for sc.Scan() {
	}
	fmt.Println("in flight, ended:", work.InFlight())
	// Output:
	// data: hello
	// data: world
	// in flight, waiting: 1
	// in flight, ended: 0
}
