// SPDX-License-Identifier: Apache-2.0

// golabels (suite go-labels): an HTTP server on 127.0.0.1 whose handlers label their work by endpoint
// with pprof.Do, and clients in the same process that keep the endpoints busy. /a hashes in
// workA, /b in workB, both labelled kind=cpu too; /c in workC (a quarter of their work) under 10
// labels, one of them 100 bytes long. golabels SECONDS nolabels does the same work without labels
// (bench/go/label_cost.py). Runs for os.Args[1] seconds (default 30).
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

var sink uint64

//go:noinline
func workA(n int) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < n; i++ {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return h
}

//go:noinline
func workB(n int) uint64 {
	h := uint64(2166136261)
	for i := 0; i < n; i++ {
		h = (h << 5) + h + uint64(i)
	}
	return h
}

//go:noinline
func workC(n int) uint64 {
	h := uint64(5381)
	for i := 0; i < n; i++ {
		h = h*33 ^ uint64(i)
	}
	return h
}

// /c: more labels than otelprofd keeps (10, where it keeps 8) and a value longer than it keeps
// (body: Go 1.24+ keeps labels sorted by key, so it is among the first 8).
func handlerC(w http.ResponseWriter, r *http.Request) {
	var h uint64
	if nolabels {
		fmt.Fprintf(w, "%d\n", workC(5000000))
		return
	}
	long := strings.Repeat("v", 100)
	labels := pprof.Labels("endpoint", "/c", "l1", "1", "l2", "2", "l3", "3", "l4", "4", "l5", "5", "l6", "6",
		"l7", "7", "l8", "8", "body", long)
	pprof.Do(r.Context(), labels, func(context.Context) {
		h = workC(5000000)
	})
	fmt.Fprintf(w, "%d\n", h)
}

var nolabels = len(os.Args) > 2 && os.Args[2] == "nolabels"

func handler(endpoint string, work func(int) uint64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var h uint64
		if nolabels {
			fmt.Fprintf(w, "%d\n", work(20000000))
			return
		}
		pprof.Do(r.Context(), pprof.Labels("endpoint", endpoint, "kind", "cpu"), func(context.Context) {
			h = work(20000000)
		})
		fmt.Fprintf(w, "%d\n", h)
	}
}

func client(url string, stop time.Time) {
	for time.Now().Before(stop) {
		resp, err := http.Get(url)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func main() {
	seconds := 30
	if len(os.Args) > 1 {
		seconds, _ = strconv.Atoi(os.Args[1])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/a", handler("/a", workA))
	mux.HandleFunc("/b", handler("/b", workB))
	mux.HandleFunc("/c", handlerC)
	go http.Serve(ln, mux)
	stop := time.Now().Add(time.Duration(seconds) * time.Second)
	base := "http://" + ln.Addr().String()
	for i := 0; i < 2; i++ {
		go client(base+"/a", stop)
		go client(base+"/b", stop)
	}
	go client(base+"/c", stop)
	time.Sleep(time.Until(stop))
}
