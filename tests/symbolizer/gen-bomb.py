#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Decompression bombs for the symbolizer's memory bound (issue 14).

Usage: gen-bomb.py SRC_ELF OUT [CLAIM_MIB [--noise]]

Writes, from a compiled program SRC_ELF (its own DWARF stripped):
  OUT           SRC_ELF plus .debug_info, .debug_abbrev, .debug_line and .debug_str, each
                SHF_COMPRESSED (ELFCOMPRESS_ZLIB) over one shared zlib stream that really inflates to
                CLAIM_MIB MiB of zeros (default 1008): ~1 MB on disk, 4 x CLAIM_MIB once inflated.
                With --noise the stream repeats 16 KiB of noise instead, at ~140:1: a bomb whose
                claims are plausible (under the forgery ratio), refused by the byte bound alone.
  OUT.debug     the same file, as the separate debug file of:
  OUT-link      SRC_ELF without DWARF and with .gnu_debuglink=OUT.debug (its own build id), so the
                bomb is reached through the debug file search (beside the binary, or by build id).
"""
import os
import random
import struct
import subprocess
import sys
import zlib

SHF_COMPRESSED = 0x800
ELFCOMPRESS_ZLIB = 1
SECTIONS = [".debug_info", ".debug_abbrev", ".debug_line", ".debug_str"]


def deflate_repeated(size, unit):
    """A zlib stream of size bytes repeating unit (a divisor of 16 MiB). Deflating 1 GiB takes seconds,
    but once the window holds the repeated unit every further 16 MiB (sync-flushed) deflates to the
    same bytes: the stream is built from three deflated chunks (the third checks the second)."""
    chunk = 16 << 20
    full, rest = divmod(size, chunk)
    data = unit * (chunk // len(unit))
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts = [b"\x78\xda"]
    adler = 1
    if full:
        parts.append(c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH))
        adler = zlib.adler32(data, adler)
    if full > 1:
        steady = c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)
        if full > 2 and c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH) != steady:
            sys.exit("gen-bomb: deflate output of a repeated chunk is not steady")
        parts += [steady] * (full - 1)
        for _ in range(full - 1):
            adler = zlib.adler32(data, adler)
    parts.append(c.compress(data[:rest]) + c.flush())
    parts.append(struct.pack(">I", zlib.adler32(data[:rest], adler)))
    return b"".join(parts)


def section_headers(data):
    """[(name, header offset)] of a little-endian ELF64 file."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    stroff = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    out = []
    for i in range(shnum):
        hdr = shoff + i * shentsize
        name = struct.unpack_from("<I", data, hdr)[0]
        end = data.index(b"\0", stroff + name)
        out.append((data[stroff + name:end].decode(), hdr))
    return out


def other_build_id(data):
    """A copy of the ELF file data whose GNU build id has its last byte flipped."""
    data = bytearray(data)
    offset, size = struct.unpack_from("<QQ", data, dict(section_headers(data))[".note.gnu.build-id"] + 0x18)
    data[offset + size - 1] ^= 0xff
    return data


def main():
    src, bomb = sys.argv[1], sys.argv[2]
    claim = int(sys.argv[3]) << 20 if len(sys.argv) > 3 else 1008 << 20
    unit = random.Random(14).randbytes(16384) if "--noise" in sys.argv[4:] else bytes(4096)
    blob, stub = bomb + ".blob", bomb + ".stub"
    # Elf64_Chdr: type, reserved, size, alignment; then the stream. The first section carries it,
    # the others a stub, pointed at the first's bytes below.
    with open(blob, "wb") as f:
        f.write(struct.pack("<IIQQ", ELFCOMPRESS_ZLIB, 0, claim, 1) + deflate_repeated(claim, unit))
    with open(stub, "wb") as f:
        f.write(bytes(24))
    args = ["objcopy", "--strip-debug", "--add-section", SECTIONS[0] + "=" + blob]
    for name in SECTIONS[1:]:
        args += ["--add-section", name + "=" + stub]
    subprocess.run(args + [src, bomb], check=True)
    os.unlink(blob)
    os.unlink(stub)

    data = bytearray(open(bomb, "rb").read())
    headers = dict(section_headers(data))
    first = headers[SECTIONS[0]]
    offset, size = struct.unpack_from("<QQ", data, first + 0x18)
    for name in SECTIONS:
        hdr = headers[name]
        flags = struct.unpack_from("<Q", data, hdr + 0x08)[0]
        struct.pack_into("<Q", data, hdr + 0x08, flags | SHF_COMPRESSED)
        struct.pack_into("<QQ", data, hdr + 0x18, offset, size)
        struct.pack_into("<Q", data, hdr + 0x30, 1)  # sh_addralign
    with open(bomb, "wb") as f:
        f.write(data)
    os.chmod(bomb, 0o755)

    # The debug-file pair gets a build id of its own, so that a cache holding OUT does not answer
    # for OUT-link by build id before its debug file is searched.
    with open(bomb + ".debug", "wb") as f:
        f.write(other_build_id(data))
    with open(src, "rb") as f:
        stripped = other_build_id(bytearray(f.read()))
    with open(bomb + ".src", "wb") as f:
        f.write(stripped)
    subprocess.run(["objcopy", "--strip-debug", "--add-gnu-debuglink=" + bomb + ".debug", bomb + ".src",
                    bomb + "-link"], check=True)
    os.unlink(bomb + ".src")
    os.chmod(bomb + "-link", 0o755)


if __name__ == "__main__":
    main()
