# SPDX-License-Identifier: Apache-2.0
"""Test workload for otelprofd's Python frames (tests/python/test_python.py): named functions burn
CPU in known lines, in the main thread and two others, with nested calls and a callback through C
code (sorted(key=...)) between Python frames. Usage: workload.py SECONDS"""
import ctypes
import sys
import threading
import time


def name_thread(name):
    """The OS thread's name (3.11 leaves every thread named after the program): PR_SET_NAME."""
    ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)


def leaf_add(n):
    total = 0
    for i in range(n):
        total += i * i  # LEAF_ADD_LINE
    return total


def middle(n):
    return leaf_add(n) + 1


def outer_main(deadline):
    while time.monotonic() < deadline:
        middle(20000)


def key_fn(x):
    total = 0
    for i in range(200):
        total += (x * i) % 7  # KEY_FN_LINE
    return total


def sorter_thread(deadline):
    name_thread("sorter")
    data = list(range(300))
    while time.monotonic() < deadline:
        sorted(data, key=key_fn)


def spin_thread(deadline):
    name_thread("spinner")
    while time.monotonic() < deadline:
        x = 0
        for i in range(10000):
            x ^= i  # SPIN_LINE


def main():
    deadline = time.monotonic() + float(sys.argv[1])
    threads = [threading.Thread(target=sorter_thread, args=(deadline,), name="sorter"),
               threading.Thread(target=spin_thread, args=(deadline,), name="spinner")]
    for t in threads:
        t.start()
    outer_main(deadline)
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
