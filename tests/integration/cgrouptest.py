# SPDX-License-Identifier: Apache-2.0
"""Real cgroups for the integration tests: a tree under the cgroup v2 hierarchy, made on demand,
with workloads started inside, and removed at the end."""
import os
import subprocess
import time

import bpftest


def v2_root():
    """The cgroup v2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host); fails the test without one."""
    root = next((line.split()[1] for line in open("/proc/mounts") if line.split()[2] == "cgroup2"), None)
    if not root:
        bpftest.fail("this test needs a cgroup v2 hierarchy, and none is mounted")
    return root


class Tree:
    def __init__(self, root):
        self.root = root
        self.created = []

    def make(self, path):
        """Create path (relative to the root) and its missing parents; return its directory."""
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            d = os.path.join(self.root, *parts[:i])
            if not os.path.isdir(d):
                os.mkdir(d)
                self.created.append(d)
        return os.path.join(self.root, path)

    @staticmethod
    def start_in(cgroup_dir, args, env=None):
        """Start args inside the cgroup (it joins before exec)."""
        def enter():
            with open(os.path.join(cgroup_dir, "cgroup.procs"), "w") as f:
                f.write("0")
        return subprocess.Popen(args, preexec_fn=enter, env=env)

    def remove(self):
        """Remove what make() created, waiting for killed processes to leave."""
        for d in reversed(self.created):
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.05)
