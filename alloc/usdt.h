/* SPDX-License-Identifier: Apache-2.0 */
/*
 * USDT probes without <sys/sdt.h>: a 5-byte nop at the probe site and a SystemTap SDT note (version 3) in
 * .note.stapsdt naming it, which tracers (libbpf's bpf_program__attach_usdt, bpftrace, perf) read
 * to put a uprobe on the nop. The note: the nop's address, the address of .stapsdt.base (so a
 * tracer can correct for prelinking), a semaphore address (0: none), then "provider\0name\0args\0",
 * args in the SystemTap form "SIZE@OPERAND" separated by spaces (8: an unsigned 64-bit value; the
 * operand as the assembler prints it, here always a register).
 *
 * An unattached probe costs its nop and the moves that put its arguments in registers. The nop is the
 * 5-byte one (nopl 0(%rax,%rax,1)) because Linux 6.17 and later turn a uprobe on that instruction,
 * after its first hit, into a call to a trampoline that enters the kernel by the uprobe system call:
 * no breakpoint exception per hit (perf on the tree benchmark at the default mean, with otelprofd
 * --alloc attached: the probes' entry and exit outside their handlers 0.33-0.35% of the program's CPU
 * through int3, 0.25-0.27% through the call; bench/RESULTS.md, alloc28). Older kernels put their
 * int3 on it as on a 1-byte nop.
 */
#ifndef OTELPROFD_ALLOC_USDT_H
#define OTELPROFD_ALLOC_USDT_H

#define USDT_STR_(x) #x
#define USDT_STR(x) USDT_STR_(x)

#define USDT_NOTE_(provider, name, args)                                                                  \
	"990: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n" /* nopl 0(%rax,%rax,1) */                              \
	".pushsection .note.stapsdt,\"\",\"note\"\n"                                                       \
	".balign 4\n"                                                                                      \
	".4byte 992f-991f, 994f-993f, 3\n"                                                                 \
	"991: .asciz \"stapsdt\"\n"                                                                        \
	"992: .balign 4\n"                                                                                 \
	"993: .8byte 990b\n"                                                                               \
	".8byte _.stapsdt.base\n"                                                                          \
	".8byte 0\n"                                                                                       \
	".asciz \"" USDT_STR(provider) "\"\n"                                                              \
	".asciz \"" USDT_STR(name) "\"\n"                                                                  \
	".asciz \"" args "\"\n"                                                                            \
	"994: .balign 4\n"                                                                                 \
	".popsection\n"                                                                                    \
	".ifndef _.stapsdt.base\n"                                                                         \
	".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"                            \
	".weak _.stapsdt.base\n"                                                                           \
	".hidden _.stapsdt.base\n"                                                                         \
	"_.stapsdt.base: .space 1\n"                                                                       \
	".size _.stapsdt.base, 1\n"                                                                        \
	".popsection\n"                                                                                    \
	".endif\n"

#define USDT1(provider, name, a1)                                                                         \
	__asm__ __volatile__(USDT_NOTE_(provider, name, "8@%0")                                           \
			     : : "r"((unsigned long)(a1)))

#define USDT3(provider, name, a1, a2, a3)                                                                 \
	__asm__ __volatile__(USDT_NOTE_(provider, name, "8@%0 8@%1 8@%2")                                 \
			     : : "r"((unsigned long)(a1)), "r"((unsigned long)(a2)), "r"((unsigned long)(a3)))

#endif
