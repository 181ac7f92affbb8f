package main

import (
	"net/http"
	"strconv"

	"github.com/idlemux/idlemux/httpidle"
)

// events serves GET /events: a stream of server-sent events, one per
// message b publishes, until the client goes or b closes.
//
// It pauses (httpidle.Pause) while it waits for the next message and
// resumes before it writes it: a stream counts as work only while it has
// a message to send, and between bursts a server with a thousand streams
// open is as quiet as one with none. Under httpidle.Handler, or with no
// wrapper (the stepper off), Pause does nothing.
func events(b *broadcaster) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		c := b.subscribe()
		defer b.unsubscribe(c)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		rc := http.NewResponseController(w)
		if rc.Flush() != nil { // the headers: the client knows it is subscribed
			return
		}
		for {
			var e event
			ok := false
			resume := httpidle.Pause(r.Context())
			select {
			case e, ok = <-c:
			case <-r.Context().Done():
			}
			resume()
			if !ok {
				return
			}
			if _, err := w.Write(frame(e)); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	}
}

// frame returns e as one server-sent event, in a buffer of its own, so
// that it goes out as one write (one chunk of the response).
func frame(e event) []byte {
	b := make([]byte, 0, len(e.data)+32)
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, e.seq, 10)
	b = append(b, "\ndata: "...)
	b = append(b, e.data...)
	return append(b, "\n\n"...)
}
