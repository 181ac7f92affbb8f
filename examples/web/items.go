package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/idlemux/idlemux/gcstep"
)

// maxItems bounds n: a listing API pages rather than answer without limit.
const maxItems = 100_000

// An item is one generated record of the listing.
type item struct {
	ID   int      `json:"id"`
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

var tagWords = []string{"red", "green", "blue", "small", "large", "new", "used", "sale"}

// makeItems generates n records, each with a name and one to four tags
// of its own, as a handler that reads rows would build them.
func makeItems(n int) []item {
	items := make([]item, n)
	for i := range items {
		tags := make([]string, 1+i%4)
		for j := range tags {
			tags[j] = tagWords[(i+j*3)%len(tagWords)]
		}
		items[i] = item{ID: i + 1, Name: fmt.Sprintf("item %d", i+1), Tags: tags}
	}
	return items
}

// newMux is the API: GET /items?n=N, and GET /stats (see stats). served
// counts the requests answered with the listing; rt is nil with the
// stepper off.
func newMux(served *atomic.Uint64, rt *gcstep.Runtime) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /stats", statsHandler(rt))
	mux.HandleFunc("GET /items", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 0 || n > maxItems {
			http.Error(w, fmt.Sprintf("n must be an integer from 0 to %d, got %q", maxItems, r.URL.Query().Get("n")),
				http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(makeItems(n)); err != nil {
			return // the client went away: nothing to tell it
		}
		served.Add(1)
	})
	return mux
}
