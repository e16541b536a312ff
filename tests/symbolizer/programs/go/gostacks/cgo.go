// SPDX-License-Identifier: Apache-2.0
package main

/*
#cgo CFLAGS: -O2 -fomit-frame-pointer
static volatile unsigned long c_sink;

__attribute__((noinline)) static unsigned long spin_step(unsigned long x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static void spin(unsigned long n)
{
	unsigned long x = n;
	for (unsigned long i = 0; i < n; i++)
		x = spin_step(x);
	c_sink = x;
}
*/
import "C"

//go:noinline
func cgoLoop(stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		C.spin(2000)
	}
}
