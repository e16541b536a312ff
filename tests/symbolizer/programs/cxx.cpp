// SPDX-License-Identifier: Apache-2.0
// Test program: C++ templates in a namespace, with an inlined template function.
#include <cstdio>
#include <unistd.h>

void *volatile captured;

extern "C" __attribute__((noinline)) void capture(void)
{
	captured = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

namespace shapes {

template <typename T> inline __attribute__((always_inline)) T twice(T x)
{
	capture(); // @TWICE
	return x * 2;
}

template <typename T> struct Box {
	T value;
	__attribute__((noinline)) T grow(T by)
	{
		value += twice(by); // @GROW
		return value;
	}
};

} // namespace shapes

int main()
{
	shapes::Box<int> box{1};
	int v = box.grow(3);
	std::printf("ret %p\nvalue %d\nready\n", captured, v);
	std::fflush(stdout);
	pause();
	return 0;
}
