#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Debian 12 root the systemd suite boots with systemd-nspawn: debootstrap's minimal base, systemd
# as init, and the libraries the package depends on (so that dpkg -i needs no network inside).
# Usage: make-root.sh DIR MIRROR PACKAGE,PACKAGE...   (test_nspawn.py keys its cache on this file)
set -eu
dir=$1 mirror=$2 packages=$3
debootstrap --variant=minbase --include="systemd,systemd-sysv,dbus,$packages" bookworm "$dir" "$mirror"
echo otelprofd-test > "$dir/etc/hostname"
# Boot to multi-user.target and nothing more: no login prompt on the console, no network setup,
# no daily timers firing during a test.
ln -sf /lib/systemd/system/multi-user.target "$dir/etc/systemd/system/default.target"
for unit in console-getty.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer \
	dpkg-db-backup.timer e2scrub_all.timer fstrim.timer systemd-networkd.service systemd-resolved.service; do
	ln -sf /dev/null "$dir/etc/systemd/system/$unit"
done
rm -rf "$dir/var/cache/apt/archives"/*.deb "$dir/var/lib/apt/lists"/*_Packages
