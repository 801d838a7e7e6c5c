#!/usr/bin/env bash
# Removes what the agent package's install.sh put on this host (README.md beside it; ADR 0027):
# the service, the unit and /opt/granule-agent. The settings and the credential in /etc/granule
# and the agent's state in /var/lib/granule-agent stay unless --purge.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: uninstall.sh [--purge] [--root DIR] [--dry-run]

Stops and disables granule-agent.service and removes the unit and /opt/granule-agent.

  --purge     also remove /etc/granule/agent.env, /etc/granule/agent.creds and
              /var/lib/granule-agent (the task journal and puppet's state)
  --root DIR  remove what install.sh --root DIR put under DIR (no systemctl)
  --dry-run   print what would be done, change nothing
USAGE
}

dry_run=0 purge=0 root=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --purge) purge=1 ;;
    --root) root="${2:?--root needs a directory}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "uninstall.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$root" ]; then
  case "$root" in /*) ;; *) root="$(pwd)/$root" ;; esac
  root="${root%/}"
  [ -d "$root" ] || { echo "uninstall.sh: --root: '$root' is not a directory" >&2; exit 2; }
fi
if [ -z "$root" ] && [ "$dry_run" = 0 ] && [ "$(id -u)" != 0 ]; then
  echo "uninstall.sh: must run as root (or with --root DIR, or --dry-run)" >&2
  exit 1
fi

R="$root"
unit=granule-agent.service
run() {
  if [ "$dry_run" = 1 ]; then echo "would run: $*"; else "$@"; fi
}

if [ -z "$R" ] && command -v systemctl >/dev/null; then
  run systemctl disable --now "$unit" 2>/dev/null || true
fi
run rm -f "${R}/etc/systemd/system/$unit"
[ -z "$R" ] && command -v systemctl >/dev/null && run systemctl daemon-reload
run rm -rf "${R}/opt/granule-agent"
[ "$dry_run" = 1 ] || echo "removed $unit and ${R}/opt/granule-agent"

if [ "$purge" = 1 ]; then
  run rm -f "${R}/etc/granule/agent.env" "${R}/etc/granule/agent.creds"
  run rmdir "${R}/etc/granule" 2>/dev/null || true
  run rm -rf "${R}/var/lib/granule-agent"
  [ "$dry_run" = 1 ] || echo "purged ${R}/etc/granule/agent.env, ${R}/etc/granule/agent.creds and ${R}/var/lib/granule-agent"
else
  [ "$dry_run" = 1 ] || echo "kept ${R}/etc/granule (settings, credential) and ${R}/var/lib/granule-agent (state): uninstall.sh --purge removes them"
fi
