package grpcidle_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/grpcidle"
)

func TestStreamPausedOnlyWhileWaitingInRecvMsg(t *testing.T) {
	f := newFixture(t)
	// The handler answers each message with the counts it sees between
	// its RecvMsg and its SendMsg.
	f.serve(t, handlers{chat: func(ss grpc.ServerStream) error {
		for {
			if err := ss.RecvMsg(new(wrapperspb.StringValue)); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if err := ss.SendMsg(wrapperspb.String(countsOf(f.work).String())); err != nil {
				return err
			}
		}
	}})
	cs := f.chat(t, ctx(t))
	for _, msg := range []string{"one", "two"} {
		if got, want := exchange(t, cs, msg), "1 in flight, 0 paused"; got != want {
			t.Errorf("%s: inside the handler got %q, want %q", msg, got, want)
		}
		// Then the handler waits in RecvMsg for the next message.
		eventually(t, "the stream to wait paused", func() bool { return countsOf(f.work) == counts{1, 1} })
	}
	if err := finish(t, cs); err != nil {
		t.Fatalf("got status %v, want OK", err)
	}
	if got, want := countsOf(f.work), (counts{}); got != want {
		t.Errorf("after the stream got %v, want %v", got, want)
	}
}

func TestStreamEnds(t *testing.T) {
	for _, tt := range []struct {
		name string
		// handler serves the stream; stop is closed when the test wants
		// it to return, and it may send its error on errs.
		handler func(ss grpc.ServerStream, stop <-chan struct{}, errs chan<- error) error
		// client ends the stream, which waits paused; it returns the
		// status the client got.
		client func(t *testing.T, cs grpc.ClientStream, cancel func(), stop chan<- struct{}) error
		code   codes.Code
		// handlerErr is what the handler sends on errs, if it sends.
		handlerErr codes.Code
	}{{
		name:    "client closes its side: io.EOF",
		handler: func(ss grpc.ServerStream, _ <-chan struct{}, _ chan<- error) error { return echoChat(ss) },
		client: func(t *testing.T, cs grpc.ClientStream, _ func(), _ chan<- struct{}) error {
			return finish(t, cs)
		},
		code: codes.OK,
	}, {
		name: "client cancels",
		handler: func(ss grpc.ServerStream, _ <-chan struct{}, errs chan<- error) error {
			err := echoChat(ss)
			errs <- err
			return err
		},
		client: func(t *testing.T, cs grpc.ClientStream, cancel func(), _ chan<- struct{}) error {
			cancel()
			return cs.RecvMsg(new(wrapperspb.StringValue))
		},
		code:       codes.Canceled,
		handlerErr: codes.Canceled,
	}, {
		name: "handler returns while its reader waits",
		handler: func(ss grpc.ServerStream, stop <-chan struct{}, errs chan<- error) error {
			msgs := make(chan *wrapperspb.StringValue)
			go func() {
				for {
					m := new(wrapperspb.StringValue)
					if err := ss.RecvMsg(m); err != nil {
						errs <- err // the stream ended under it
						return
					}
					msgs <- m
				}
			}()
			if err := ss.SendMsg(<-msgs); err != nil {
				return err
			}
			<-stop
			return nil
		},
		client: func(t *testing.T, cs grpc.ClientStream, _ func(), stop chan<- struct{}) error {
			close(stop)
			err := cs.RecvMsg(new(wrapperspb.StringValue))
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		},
		code:       codes.OK,
		handlerErr: codes.Canceled,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			stop, errs := make(chan struct{}), make(chan error, 1)
			f.serve(t, handlers{chat: func(ss grpc.ServerStream) error { return tt.handler(ss, stop, errs) }})
			cctx, cancel := context.WithCancel(ctx(t))
			defer cancel()
			cs := f.chat(t, cctx)
			if got := exchange(t, cs, "hello"); got != "hello" {
				t.Fatalf("got %q, want %q", got, "hello")
			}
			eventually(t, "the stream to wait paused", func() bool { return countsOf(f.work) == counts{1, 1} })

			err := tt.client(t, cs, cancel, stop)
			if got := status.Code(err); got != tt.code {
				t.Errorf("the client got code %v (%v), want %v", got, err, tt.code)
			}
			if tt.handlerErr != codes.OK {
				err := received(t, errs, "the server's RecvMsg to end")
				if got := status.Code(err); got != tt.handlerErr {
					t.Errorf("the server's RecvMsg got code %v (%v), want %v", got, err, tt.handlerErr)
				}
			}
			eventually(t, "the count to end", func() bool { return countsOf(f.work) == counts{} })
		})
	}
}

func TestStreamHandlerFails(t *testing.T) {
	f := newFixture(t)
	f.serve(t, handlers{chat: func(ss grpc.ServerStream) error {
		if err := ss.RecvMsg(new(wrapperspb.StringValue)); err != nil {
			return err
		}
		return status.Error(codes.Aborted, "failed as asked")
	}})
	cs := f.chat(t, ctx(t))
	if err := cs.SendMsg(wrapperspb.String("fail")); err != nil {
		t.Fatalf("SendMsg: %v", err)
	}
	err := cs.RecvMsg(new(wrapperspb.StringValue))
	if got := status.Code(err); got != codes.Aborted {
		t.Errorf("got code %v (%v), want %v", got, err, codes.Aborted)
	}
	// The count ended before gRPC sent the status.
	if got, want := countsOf(f.work), (counts{}); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestStreamKeepsItsMethods(t *testing.T) {
	f := newFixture(t)
	f.serve(t, handlers{chat: func(ss grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		if err := ss.SetHeader(metadata.Pairs("header", "h")); err != nil {
			return err
		}
		ss.SetTrailer(metadata.Pairs("trailer", "t"))
		if err := grpc.SetTrailer(ss.Context(), metadata.Pairs("trailer2", "t2")); err != nil {
			return err
		}
		if err := ss.RecvMsg(new(wrapperspb.StringValue)); err != nil {
			return err
		}
		return ss.SendMsg(wrapperspb.String(md.Get("asked")[0]))
	}})
	cs := f.chat(t, metadata.AppendToOutgoingContext(ctx(t), "asked", "from metadata"))
	if got, want := exchange(t, cs, "x"), "from metadata"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if err := finish(t, cs); err != nil {
		t.Fatal(err)
	}
	header, err := cs.Header()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		md   metadata.MD
		key  string
		want string
	}{{header, "header", "h"}, {cs.Trailer(), "trailer", "t"}, {cs.Trailer(), "trailer2", "t2"}} {
		if got := tt.md.Get(tt.key); len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s: got %q, want [%q]", tt.key, got, tt.want)
		}
	}
}

func TestManyStreamsWaiting(t *testing.T) {
	const n = 100
	f := newFixture(t)
	f.serve(t, handlers{})
	streams := make([]grpc.ClientStream, n)
	for i := range streams {
		streams[i] = f.chat(t, ctx(t))
		if got := exchange(t, streams[i], "hello"); got != "hello" {
			t.Fatalf("stream %d: got %q, want %q", i, got, "hello")
		}
	}
	eventually(t, "every stream to wait paused", func() bool { return countsOf(f.work) == counts{n, n} })
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, cs := range streams {
		wg.Go(func() {
			if err := cs.CloseSend(); err != nil {
				errs <- err
				return
			}
			if err := cs.RecvMsg(new(wrapperspb.StringValue)); !errors.Is(err, io.EOF) {
				errs <- err
			}
		})
	}
	wg.Wait() // each RecvMsg has its stream's deadline
	close(errs)
	for err := range errs {
		t.Errorf("closing a stream: %v", err)
	}
	if got, want := countsOf(f.work), (counts{}); got != want {
		t.Errorf("after the streams got %v, want %v", got, want)
	}
}

// A stream that waits for its client lets the Runtime return the memory
// it left; one that waits for anything else keeps the process busy.
func TestStreamReleasesMemoryWhileWaiting(t *testing.T) {
	for _, tt := range []struct {
		name    string
		inRecv  bool // the handler waits in RecvMsg, not for stop
		release bool
	}{
		{"waits in RecvMsg", true, true},
		{"waits for its own events", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A budget that pays for any release: the test is about
			// whether the stream's wait counts as quiet.
			f := newFixture(t, gcstep.WithReleaseDelay(10*time.Millisecond), gcstep.WithBudget(1))
			stop := make(chan struct{})
			f.serve(t, handlers{chat: func(ss grpc.ServerStream) error {
				m := new(wrapperspb.StringValue)
				if err := ss.RecvMsg(m); err != nil {
					return err
				}
				garbage(16 << 20)
				if err := ss.SendMsg(m); err != nil {
					return err
				}
				if !tt.inRecv {
					<-stop
				}
				return echoChat(ss)
			}})
			before := f.rt.Stats().Releases
			cs := f.chat(t, ctx(t))
			exchange(t, cs, "allocate")

			// A behaviour test, not a benchmark: how soon the release
			// comes depends on the machine; that it comes does not. The
			// control waits less: nothing can release while it is busy.
			limit := 5 * time.Second
			if !tt.release {
				limit = 300 * time.Millisecond
			}
			released := false
			for deadline := time.Now().Add(limit); !released && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
				released = f.rt.Stats().Releases > before
			}
			if released != tt.release {
				t.Errorf("released while the stream was open: got %v, want %v (%+v)", released, tt.release, f.rt.Stats())
			}
			if got := f.work.InFlight(); got != 1 {
				t.Errorf("got %d in flight, want 1: the stream is open", got)
			}
			close(stop)
			if err := finish(t, cs); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// sink keeps garbage from being optimised away.
var sink []byte

// garbage allocates n bytes in pieces of 64 KiB and drops them.
func garbage(n int) {
	for range n >> 16 {
		sink = make([]byte, 64<<10)
	}
	sink = nil
}

// The interceptor is called directly, with a stream of the test's own,
// for the handlers and RecvMsg calls that panic: gRPC does not recover a
// handler's panic, and the test process would die.
func TestStreamInterceptorEndsEveryCall(t *testing.T) {
	errFailed := errors.New("failed")
	for _, tt := range []struct {
		name string
		// recv is the inner stream's RecvMsg; release is closed once the
		// handler has returned or panicked.
		recv func(release <-chan struct{}) error
		// handler uses the wrapped stream; waiting reports whether the
		// handler's own goroutine waits in RecvMsg at its end.
		handler func(ss grpc.ServerStream) error
		waiting bool
		err     error
		panic   any
	}{{
		name:    "RecvMsg returns a message",
		recv:    func(<-chan struct{}) error { return nil },
		handler: func(ss grpc.ServerStream) error { return ss.RecvMsg(nil) },
	}, {
		name:    "RecvMsg fails",
		recv:    func(<-chan struct{}) error { return errFailed },
		handler: func(ss grpc.ServerStream) error { return ss.RecvMsg(nil) },
		err:     errFailed,
	}, {
		name:    "RecvMsg returns io.EOF and the handler nil",
		recv:    func(<-chan struct{}) error { return io.EOF },
		handler: func(ss grpc.ServerStream) error { ss.RecvMsg(nil); return nil },
	}, {
		name:    "RecvMsg panics",
		recv:    func(<-chan struct{}) error { panic("recv panicked") },
		handler: func(ss grpc.ServerStream) error { return ss.RecvMsg(nil) },
		panic:   "recv panicked",
	}, {
		name:    "handler panics after RecvMsg",
		recv:    func(<-chan struct{}) error { return nil },
		handler: func(ss grpc.ServerStream) error { ss.RecvMsg(nil); panic("handler panicked") },
		panic:   "handler panicked",
	}, {
		name:    "handler panics while its reader waits in RecvMsg",
		recv:    func(release <-chan struct{}) error { <-release; return errFailed },
		handler: func(grpc.ServerStream) error { panic("handler panicked") },
		waiting: true,
		panic:   "handler panicked",
	}, {
		name:    "handler returns while its reader waits in RecvMsg",
		recv:    func(release <-chan struct{}) error { <-release; return errFailed },
		handler: func(grpc.ServerStream) error { return nil },
		waiting: true,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			intercept := grpcidle.StreamServerInterceptor(f.work)
			release := make(chan struct{})
			// The counts each RecvMsg saw while it waited. One that waits
			// beside the handler is seen from the handler instead: the
			// counts must be read by one goroutine at a time.
			var inRecv []counts
			inner := &fakeStream{ctx: context.WithValue(context.Background(), ctxKey{}, "the call's"), recv: func() error {
				if !tt.waiting {
					inRecv = append(inRecv, countsOf(f.work))
				}
				return tt.recv(release)
			}}
			readerDone := make(chan error, 1)
			var err error
			p := panicked(func() {
				err = intercept("srv", inner, &grpc.StreamServerInfo{FullMethod: chatMethod}, func(srv any, ss grpc.ServerStream) error {
					if srv != "srv" || ss.Context().Value(ctxKey{}) != "the call's" {
						t.Errorf("the handler got %v and a stream of another context", srv)
					}
					if err := ss.SendMsg("sent"); err != nil || len(inner.sent) != 1 {
						t.Errorf("SendMsg did not reach the call's stream: %v", err)
					}
					if tt.waiting {
						go func() { readerDone <- ss.RecvMsg(nil) }()
						eventually(t, "the reader to wait paused", func() bool { return countsOf(f.work) == counts{1, 1} })
					}
					return tt.handler(ss)
				})
			})
			if p != tt.panic {
				t.Errorf("got panic %v, want %v", p, tt.panic)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("got error %v, want %v", err, tt.err)
			}
			if got, want := countsOf(f.work), (counts{}); got != want {
				t.Errorf("after the handler got %v, want %v", got, want)
			}
			close(release)
			if tt.waiting {
				if err := received(t, readerDone, "the reader's RecvMsg"); !errors.Is(err, errFailed) {
					t.Errorf("the reader's RecvMsg got %v, want %v", err, errFailed)
				}
				if got, want := countsOf(f.work), (counts{}); got != want {
					t.Errorf("after the reader got %v, want %v", got, want)
				}
			}
			for i, c := range inRecv {
				if want := (counts{1, 1}); c != want {
					t.Errorf("RecvMsg %d: while it waited got %v, want %v", i, c, want)
				}
			}
			if got, want := inner.recvs, 1; got != want {
				t.Errorf("got %d RecvMsg calls on the call's stream, want %d", got, want)
			}
		})
	}
}

// fakeStream is a call's stream for the interceptor called directly. The
// methods it does not define panic.
type fakeStream struct {
	grpc.ServerStream
	ctx   context.Context
	recv  func() error
	recvs int // RecvMsg calls, all on one goroutine
	sent  []any
}

// ctxKey marks the context of a fakeStream.
type ctxKey struct{}

func (s *fakeStream) Context() context.Context { return s.ctx }

func (s *fakeStream) RecvMsg(any) error {
	s.recvs++
	return s.recv()
}

func (s *fakeStream) SendMsg(m any) error {
	s.sent = append(s.sent, m)
	return nil
}
