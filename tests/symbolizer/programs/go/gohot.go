// SPDX-License-Identifier: Apache-2.0
// A Go workload with known hot functions for the symbolizer's Go tests: hotLoop, and outer with
// inner inlined into it, run by the main goroutine and by worker goroutines.
// Usage: gohot [SECONDS] (default one hour).
package main

import (
	"os"
	"strconv"
	"time"
)

var sink uint64

// inner is small enough for the compiler to inline into outer.
func inner(x uint64) uint64 {
	return x*2654435761 ^ (x >> 7) // LINE:inner
}

//go:noinline
func outer(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += inner(uint64(i)) // LINE:call
	}
	return s
}

//go:noinline
func hotLoop(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s = s*31 + uint64(i) // LINE:hot
	}
	return s
}

func worker(done chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		sink += outer(200000)
		sink += hotLoop(100000)
	}
}

func main() {
	secs := 3600
	if len(os.Args) > 1 {
		secs, _ = strconv.Atoi(os.Args[1])
	}
	done := make(chan struct{})
	go worker(done)
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(deadline) {
		sink += hotLoop(100000)
	}
	close(done)
}
