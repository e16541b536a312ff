// SPDX-License-Identifier: Apache-2.0
// A Go workload for the stack tests (tests/integration/test_go_stacks.py): every stack shape the
// unwinder must keep whole, built with and without its symbol table and DWARF.
//   - main.main -> main.worker -> main.hashBlock: a leaf with no frame of its own (the caller a
//     frame-pointer walk loses),
//   - main.deep -> main.middle -> main.outer with main.inner inlined: frames with locals, and an
//     inlined call,
//   - main.cgoLoop -> C spin -> spin_step (cgo: the C side unwound by its CFI, up to the switch to
//     the system stack).
// Usage: gostacks [SECONDS] (default one hour).
package main

import (
	"os"
	"strconv"
	"time"
)

var sink uint64

//go:noinline
func hashBlock(b *[64]uint64, seed uint64) uint64 {
	h := seed
	for i := range b {
		h = (h ^ b[i]) * 1099511628211 // LINE:leaf
	}
	return h
}

//go:noinline
func worker(rounds int) uint64 {
	var b [64]uint64
	var h uint64
	for r := 0; r < rounds; r++ {
		b[r&63] = uint64(r)
		h = hashBlock(&b, h) // LINE:worker
	}
	return h
}

// inner is small enough for the compiler to inline into outer.
func inner(x uint64) uint64 {
	return x*2654435761 ^ (x >> 7)
}

//go:noinline
func outer(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += inner(uint64(i)) // LINE:inlined
	}
	return s
}

//go:noinline
func middle(n int) uint64 {
	var pad [8]uint64
	pad[n&7] = outer(n)
	return pad[n&7] + pad[(n+1)&7]
}

//go:noinline
func deep(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		sink += middle(300000)
	}
}

func main() {
	secs := 3600
	if len(os.Args) > 1 {
		secs, _ = strconv.Atoi(os.Args[1])
	}
	stop := make(chan struct{})
	go deep(stop)
	go cgoLoop(stop)
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(deadline) {
		sink += worker(20000)
	}
	close(stop)
}
