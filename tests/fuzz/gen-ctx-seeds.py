#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seeds for fuzz-process-ctx: ProcessContext payloads as an SDK publishes them (and a few broken
ones), each followed by a mapping header and a thread context record's attrs_data.
Usage: gen-ctx-seeds.py DIR"""
import os
import struct
import sys


def varint(v):
    out = bytearray()
    while True:
        out.append((v & 0x7f) | (0x80 if v > 0x7f else 0))
        v >>= 7
        if not v:
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def any_string(s):
    return field(1, s.encode())


def key_value(key, value):
    return field(1, key.encode()) + field(2, value)


def key_map(names):
    return field(5, b''.join(field(1, any_string(n)) for n in names))


def context(attrs, schema, keys):
    resource = b''.join(field(1, key_value(k, any_string(v))) for k, v in attrs)
    extra = field(2, key_value('threadlocal.schema_version', any_string(schema)))
    extra += field(2, key_value('threadlocal.attribute_key_map', key_map(keys)))
    return field(1, resource) + extra


def header(payload, published_at=1, version=2, offset=0x80):
    return b'OTEL_CTX' + struct.pack('<IIQQ', version, len(payload), published_at, offset)


def entries(*pairs):
    return b''.join(bytes([k, len(v)]) + v for k, v in pairs)


def seed(payload, hdr, attrs):
    return struct.pack('<H', len(payload)) + payload + hdr + attrs


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    svc = context([('service.name', 'checkout'), ('deployment.environment.name', 'prod')], 'tls_v1',
                  ['http.route', 'user.id', 'tenant'])
    dev = context([('service.name', 'svc')], 'tlsdesc_v1_dev', ['k%d' % i for i in range(40)])
    seeds = {
        'valid': seed(svc, header(svc), entries((0, b'GET /a'), (1, b'u1'), (0, b'GET /b'))),
        'dev': seed(dev, header(dev, version=1), entries(*((i, b'v' * i) for i in range(40)))),
        'unknown-key': seed(svc, header(svc), entries((9, b'x'), (2, b't'))),
        'incomplete': seed(svc, header(svc), entries((0, b'abc')) + b'\x01\x09ab'),
        'bad-utf8': seed(svc, header(svc), entries((0, b'\xc3\x28'), (1, b'a\0b'))),
        'torn': seed(svc, header(svc, published_at=3), b''),
        'being-written': seed(svc, header(svc, published_at=0), b''),
        'empty': seed(b'', header(b''), b''),
        'varint10': seed(b'\x08' + b'\xff' * 9 + b'\x01', b'', b''),
        'truncated': seed(svc[:len(svc) // 2], b'', b''),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
