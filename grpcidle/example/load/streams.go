package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idlemux/idlemux/internal/procfs"
)

// StreamsResult is what a run of -streams measured.
type StreamsResult struct {
	Streams  int `json:"streams"`
	Messages int `json:"messages"` // echoed, over every burst
	// P50 and P99 are of the messages' round trips: sent to echoed.
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	// FirstP99 is the p99 of each stream's first message in a burst, the
	// first after a quiet settle: what the quiet's release costs them.
	FirstP99 time.Duration `json:"first_p99_ns"`
	// StartRSS is the server's VmRSS before the streams opened; Settled
	// its VmRSS -settle after each burst's last echo, the streams all
	// open and waiting; CPU its CPU time over each burst and its settle.
	// Without -pid they are zero.
	StartRSS uint64          `json:"start_rss"`
	Settled  []uint64        `json:"settled_rss"`
	CPU      []time.Duration `json:"cpu_ns"`
}

// chatDesc is the Echo service's Chat, as a client sees it.
var chatDesc = &grpc.StreamDesc{StreamName: "Chat", ServerStreams: true, ClientStreams: true}

// streams opens cfg.streams Chat streams, then cfg.bursts times sends
// cfg.messages messages on every stream, cfg.every apart, and waits for
// their echoes and then cfg.settle with every stream open and idle.
func streams(ctx context.Context, cfg config) (StreamsResult, error) {
	res := StreamsResult{Streams: cfg.streams}
	if cfg.pid != 0 {
		st, err := procfs.Status(cfg.pid)
		if err != nil {
			return res, err
		}
		res.StartRSS = st.RSS
	}
	conn, err := grpc.NewClient(cfg.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return res, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ss := make([]grpc.ClientStream, cfg.streams)
	for i := range ss {
		if ss[i], err = conn.NewStream(ctx, chatDesc, "/idlemux.example.Echo/Chat"); err != nil {
			return res, fmt.Errorf("opening stream %d: %v", i, err)
		}
	}
	defer func() {
		for _, s := range ss {
			s.CloseSend()
		}
	}()
	pad := strings.Repeat("x", cfg.size)
	var all, first []time.Duration
	for b := range cfg.bursts {
		cpu0, err := serverCPU(cfg.pid)
		if err != nil {
			return res, err
		}
		lat := make([][]time.Duration, len(ss))
		errs := make([]error, len(ss))
		var wg sync.WaitGroup
		for i, s := range ss {
			wg.Go(func() {
				// Spread the streams' sends over the first interval.
				time.Sleep(time.Duration(i) * cfg.every / time.Duration(len(ss)))
				lat[i], errs[i] = chat(s, cfg.messages, cfg.every, pad)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return res, fmt.Errorf("burst %d: %v", b+1, err)
		}
		for _, l := range lat {
			all = append(all, l...)
			if len(l) > 0 {
				first = append(first, l[0])
			}
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(cfg.settle):
		}
		if cfg.pid != 0 {
			st, err := procfs.Status(cfg.pid)
			if err != nil {
				return res, err
			}
			cpu, err := serverCPU(cfg.pid)
			if err != nil {
				return res, err
			}
			res.Settled, res.CPU = append(res.Settled, st.RSS), append(res.CPU, cpu-cpu0)
		}
	}
	slices.Sort(all)
	res.Messages = len(all)
	if len(all) > 0 {
		res.P50, res.P99 = quantile(all, 50), quantile(all, 99)
	}
	slices.Sort(first)
	if len(first) > 0 {
		res.FirstP99 = quantile(first, 99)
	}
	return res, nil
}

func serverCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	return procfs.CPU(pid)
}

// chat sends n messages on s, every apart, each its send time and pad,
// and receives their echoes; it returns each message's round trip.
func chat(s grpc.ClientStream, n int, every time.Duration, pad string) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	recvd := make(chan error, 1)
	go func() {
		for range n {
			m := new(wrapperspb.StringValue)
			if err := s.RecvMsg(m); err != nil {
				recvd <- err
				return
			}
			sent, _, _ := strings.Cut(m.GetValue(), " ")
			t, err := strconv.ParseInt(sent, 10, 64)
			if err != nil {
				recvd <- fmt.Errorf("echo %q: %v", m.GetValue()[:min(len(m.GetValue()), 30)], err)
				return
			}
			lat = append(lat, time.Since(time.Unix(0, t)))
		}
		recvd <- nil
	}()
	next := time.Now()
	for range n {
		time.Sleep(time.Until(next))
		next = next.Add(every)
		if err := s.SendMsg(wrapperspb.String(strconv.FormatInt(time.Now().UnixNano(), 10) + " " + pad)); err != nil {
			if errors.Is(err, io.EOF) {
				break // the stream ended: RecvMsg says why
			}
			return nil, err
		}
	}
	if err := <-recvd; err != nil {
		return nil, err
	}
	return lat, nil
}
