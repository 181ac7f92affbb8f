package netloop_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"

	"github.com/idlemux/idlemux/netloop"
)

// An upper-casing line server: OnData handles the whole lines in the
// input and leaves a partial one for the next call.
func Example() {
	srv, err := netloop.Listen("tcp", "127.0.0.1:0", netloop.HandlerFuncs{
		Data: func(c *netloop.Conn) {
			for {
				in := c.Peek()
				i := bytes.IndexByte(in, '\n')
				if i < 0 {
					return
				}
				c.Write(bytes.ToUpper(in[:i+1]))
				c.Discard(i + 1)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error)
	go func() { done <- srv.Serve() }()

	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Fprint(c, "hello, ")
	fmt.Fprint(c, "world\nbye\n")
	r := bufio.NewReader(c)
	for range 2 {
		line, _ := r.ReadString('\n')
		fmt.Print(line)
	}
	c.Close()

	fmt.Println(srv.Shutdown(context.Background()), <-done)
	// Output:
	// HELLO, WORLD
	// BYE
	// <nil> <nil>
}

// A broadcast from another goroutine: each loop is handed the work through
// Loop.Post and writes to its own connections, with no lock shared between
// the loops.
func ExampleLoop_Post() {
	opened := make(chan struct{}, 1)
	srv, err := netloop.Listen("tcp", "127.0.0.1:0", netloop.HandlerFuncs{
		Open: func(c *netloop.Conn) { opened <- struct{}{} },
	}, netloop.WithLoops(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error)
	go func() { done <- srv.Serve() }()

	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	<-opened
	for _, l := range srv.Loops() {
		l.Post(func() {
			for conn := range l.Conns() {
				conn.WriteString("news for everyone\n")
			}
		})
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print(line)
	c.Close()

	fmt.Println(srv.Shutdown(context.Background()), <-done)
	// Output:
	// news for everyone
	// <nil> <nil>
}
