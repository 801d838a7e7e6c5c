#!/bin/sh
# Becomes one simulated host of the multi-host tier, then runs a command there (test/fleet/README.md).
#
#   ip netns exec <netns> unshare --mount --uts --ipc --pid --fork --kill-child=SIGKILL \
#     /bin/sh enter-host.sh DISK HOSTNAME [--ro SRC DEST]... -- COMMAND [ARG]...
#
# Runs as PID 1 of a fresh PID namespace, in a fresh mount namespace (private propagation, so
# nothing here is seen outside). The host's root file system is DISK (a directory the harness
# made on the control plane's side, holding the host's own /etc copy, /root, /tmp, /var, /srv,
# /opt and /run) with the machine's /usr bound read-only, its own /proc (this PID namespace only),
# /sys (this network namespace's), a /dev with only the usual character devices and a private
# /dev/shm, and each `--ro SRC DEST` bound read-only at DEST. pivot_root then detaches the old
# root: nothing else of the machine (/work, the control plane's /tmp, other hosts' disks) has a
# path here any more.
set -eu

disk="$1"
name="$2"
shift 2

mount --bind "$disk" "$disk"
for d in usr; do
  mkdir -p "$disk/$d"
  mount --bind "/$d" "$disk/$d"
  mount -o remount,bind,ro "$disk/$d"
done
# bin, sbin, lib, lib64 as this machine has them: links into /usr, or read-only binds.
for d in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$d" ]; then
    [ -L "$disk/$d" ] || ln -s "$(readlink "/$d")" "$disk/$d"
  elif [ -d "/$d" ]; then
    mkdir -p "$disk/$d"
    mount --bind "/$d" "$disk/$d"
    mount -o remount,bind,ro "$disk/$d"
  fi
done

while [ "$#" -gt 0 ] && [ "$1" = "--ro" ]; do
  src="$2"
  dest="$disk$3"
  mkdir -p "$dest"
  mount --bind "$src" "$dest"
  mount -o remount,bind,ro "$dest"
  shift 3
done
[ "${1:-}" = "--" ] || { echo "enter-host.sh: expected -- before the command, found '${1:-}'" >&2; exit 2; }
shift

mkdir -p "$disk/proc" "$disk/sys" "$disk/dev" "$disk/tmp" "$disk/run"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$disk/sys"
mount -t tmpfs -o mode=755,nosuid,size=1m granule-dev "$disk/dev"
for dev in null zero full random urandom tty; do
  : > "$disk/dev/$dev"
  mount --bind "/dev/$dev" "$disk/dev/$dev"
done
mkdir -p "$disk/dev/shm"
mount -t tmpfs -o mode=1777,nosuid,nodev,size=16m granule-shm "$disk/dev/shm"
ln -s /proc/self/fd "$disk/dev/fd"
ln -s /proc/self/fd/0 "$disk/dev/stdin"
ln -s /proc/self/fd/1 "$disk/dev/stdout"
ln -s /proc/self/fd/2 "$disk/dev/stderr"

cd "$disk"
old="$(mktemp -d "$disk/.old-root.XXXXXX")"
old="/${old##*/}"
pivot_root . ".$old"
cd /
mount -t proc -o nosuid,nodev,noexec proc /proc
umount -l "$old"
rmdir "$old"
hostname "$name"
exec "$@"
