// SPDX-License-Identifier: Apache-2.0
#include "python_code.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

int python_read_process(void *ctx, pid_t pid, uint64_t address, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)address, .iov_len = len };
	ssize_t got;

	(void)ctx;
	got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got < 0)
		return -errno;
	return (size_t)got == len ? 0 : -EFAULT;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c >= 0xd800 && c < 0xe000)
		c = 0xfffd; /* a lone surrogate (str allows them; UTF-8 does not) */
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	if (c > 0x10ffff)
		c = 0xfffd;
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/*
 * The str object at address as UTF-8 into out (room for 4 * max + 1 bytes): its length, or -errno.
 * Only compact strings (every str a code object holds); NUL characters become '?'.
 */
static int read_str(const struct python_layout *l, python_read_fn read, void *ctx, pid_t pid, uint64_t address,
		    size_t max, char *out)
{
	uint8_t head[80], raw[4 * PYTHON_MAX_FILE];
	uint32_t state, kind;
	int64_t length;
	size_t n = 0, data;

	if (!address || l->unicode_compact_data > sizeof(head) || l->unicode_state + 4 > sizeof(head) ||
	    l->unicode_length + 8 > sizeof(head) || max > PYTHON_MAX_FILE)
		return -EINVAL;
	if (read(ctx, pid, address, head, l->unicode_compact_data))
		return -EFAULT;
	memcpy(&state, head + l->unicode_state, sizeof(state));
	length = (int64_t)u64_at(head + l->unicode_length);
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || length < 0 || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	if ((uint64_t)length > max)
		length = (int64_t)max; /* cut */
	data = ((state >> 6) & 1) ? l->unicode_ascii_data : l->unicode_compact_data;
	if (((state >> 6) & 1) && kind != 1)
		return -EINVAL;
	if (length && read(ctx, pid, address + data, raw, (size_t)length * kind))
		return -EFAULT;
	for (int64_t i = 0; i < length; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8
							    : (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
								      (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
		n += put_utf8(out + n, c ? c : '?');
	}
	out[n] = 0;
	return (int)n;
}

int python_code_read(const struct python_layout *l, python_read_fn read, void *ctx, pid_t pid, uint64_t address,
		     uint64_t code_type, struct python_code **out)
{
	uint8_t head[256], bytes_head[40];
	char qualname[4 * PYTHON_MAX_NAME + 1], filename[4 * PYTHON_MAX_FILE + 1];
	uint64_t linetable;
	int64_t lt_len;
	int32_t firstlineno;
	int nq, nf;
	struct python_code *c;
	size_t size;

	*out = NULL;
	if (l->code_linetable + 8 > sizeof(head) || l->code_qualname + 8 > sizeof(head) ||
	    l->code_filename + 8 > sizeof(head) || l->code_firstlineno + 4 > sizeof(head) ||
	    l->bytes_data > sizeof(bytes_head) || l->bytes_size + 8 > sizeof(bytes_head))
		return -EINVAL;
	if (!address || (address & 7) || read(ctx, pid, address, head, sizeof(head)))
		return -EFAULT;
	if (code_type && u64_at(head + l->object_type) != code_type)
		return -EINVAL;
	memcpy(&firstlineno, head + l->code_firstlineno, sizeof(firstlineno));
	nq = read_str(l, read, ctx, pid, u64_at(head + l->code_qualname), PYTHON_MAX_NAME, qualname);
	nf = read_str(l, read, ctx, pid, u64_at(head + l->code_filename), PYTHON_MAX_FILE, filename);
	if (nq < 0 || nf < 0)
		return nq == -EFAULT || nf == -EFAULT ? -EFAULT : -EINVAL;
	linetable = u64_at(head + l->code_linetable);
	if (!linetable || read(ctx, pid, linetable, bytes_head, l->bytes_data))
		return -EFAULT;
	lt_len = (int64_t)u64_at(bytes_head + l->bytes_size);
	if (lt_len < 0 || lt_len > PYTHON_MAX_LINETABLE)
		return -EINVAL;
	size = sizeof(*c) + (size_t)nq + 1 + (size_t)nf + 1 + (size_t)lt_len;
	c = malloc(size);
	if (!c)
		return -ENOMEM;
	*c = (struct python_code){ .linetable_len = (uint32_t)lt_len, .bytes = size,
				   .firstlineno = firstlineno > 0 ? (uint32_t)firstlineno : 0 };
	c->qualname = memcpy((char *)(c + 1), qualname, (size_t)nq + 1);
	c->filename = memcpy((char *)(c + 1) + nq + 1, filename, (size_t)nf + 1);
	c->linetable = (uint8_t *)(c + 1) + nq + 1 + nf + 1;
	if (lt_len && read(ctx, pid, linetable + l->bytes_data, (void *)c->linetable, (size_t)lt_len)) {
		free(c);
		return -EFAULT;
	}
	*out = c;
	return 0;
}

/* A varint of the location table: 6-bit groups, least significant first, bit 6 says more follow. */
static uint32_t varint(const uint8_t *t, uint32_t len, uint32_t *i)
{
	uint32_t v = 0;
	unsigned shift = 0;

	while (*i < len && shift < 32) {
		uint8_t b = t[(*i)++];

		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int32_t svarint(const uint8_t *t, uint32_t len, uint32_t *i)
{
	uint32_t v = varint(t, len, i);

	return v & 1 ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

uint32_t python_code_line(const struct python_code *code, uint32_t lasti)
{
	const uint8_t *t = code->linetable;
	int64_t line = code->firstlineno;
	uint32_t i = 0, addr = 0;

	/* Entries: a first byte with bit 7 set, the code in bits 3-6 and the code units covered - 1 in
	 * bits 0-2, then the code's operands (bytes without bit 7). */
	while (i < code->linetable_len) {
		uint8_t first = t[i++];
		unsigned kind = (first >> 3) & 15, units = (first & 7) + 1;
		int32_t delta = 0;

		if (!(first & 128))
			return 0; /* not an entry's start: a table this reader does not know */
		if (kind == 14 || kind == 13)
			delta = svarint(t, code->linetable_len, &i);
		else if (kind >= 10 && kind <= 12)
			delta = (int32_t)kind - 10;
		line += delta;
		if (lasti < addr + units)
			return kind == 15 || line <= 0 || line > UINT32_MAX ? 0 : (uint32_t)line;
		addr += units;
		/* Skip the operands: the next entry starts at the next byte with bit 7 set. */
		while (i < code->linetable_len && !(t[i] & 128))
			i++;
	}
	return 0;
}
