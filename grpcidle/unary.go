package grpcidle

import (
	"context"

	"google.golang.org/grpc"

	"github.com/idlemux/idlemux/gcstep"
)

// UnaryServerInterceptor returns an interceptor that counts each unary
// call as work in flight on w from the moment gRPC calls the interceptor
// (the request has arrived and been decoded) until the handler returns,
// also when it returns an error or panics (the panic goes on, as without
// the interceptor). Sending the response afterwards is not counted.
//
// It panics, with a message that starts with "grpcidle:", if w is nil.
func UnaryServerInterceptor(w *gcstep.Work) grpc.UnaryServerInterceptor {
	if w == nil {
		panic("grpcidle: UnaryServerInterceptor with a nil Work")
	}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		w.Begin()
		defer w.End()
		return handler(ctx, req)
	}
}
