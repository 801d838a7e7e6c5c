#!/usr/bin/env bash
# Installs (or upgrades) the Granule node agent on this host as a systemd service.
# Idempotent: run it again after a new build to upgrade; an existing env file is kept.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: install.sh [--dry-run] [--source DIR] [--node-uid UID]

Copies a built Granule tree (DIR/dist, DIR/node_modules, DIR/package.json; default: the
repository this script is in, after `npm run build`) to /opt/granule, writes
/etc/granule/node-agent.env from a template if it does not exist, installs
granule-node-agent.service, enables and (re)starts it.

  --dry-run       print what would be done, change nothing (no root needed)
  --source DIR    the built tree to install (default: the repository root)
  --node-uid UID  GRANULE_NODE_UID for a new env file (default: the short host name)
USAGE
}

# The node uid rule of libs/domain/core (IDENTIFIER_RULES.nodeUid); test/packaging/node-uid-rule.spec.ts checks
# that these two lines equal it.
NODE_UID_RE='^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$'
NODE_UID_RULE="1 to 63 letters, digits, '_' or '-', starting with a letter or digit"
# In the C locale ranges such as A-Z are ASCII only, as in the TS rule.
valid_uid() { local LC_ALL=C; [[ "$1" =~ $NODE_UID_RE ]]; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source_dir="$(cd "$here/../.." && pwd)"
dry_run=0
node_uid=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --source) source_dir="${2:?--source needs a directory}"; shift ;;
    --node-uid) node_uid="${2:?--node-uid needs a value}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

if [ -n "$node_uid" ]; then
  valid_uid "$node_uid" || { echo "install.sh: --node-uid: expected a node uid of $NODE_UID_RULE, got '$node_uid'" >&2; exit 2; }
else
  # The short host name, made into a uid: other characters become '_', at most 63 of them.
  host="$(hostname -s 2>/dev/null || hostname)"
  node_uid="$(printf '%s' "$host" | tr -c 'A-Za-z0-9_\n-' '_' | cut -c1-63)"
  valid_uid "$node_uid" || { echo "install.sh: the host name '$host' does not make a node uid ($NODE_UID_RULE): pass --node-uid" >&2; exit 2; }
fi

prefix=/opt/granule
conf_dir=/etc/granule
env_file="$conf_dir/node-agent.env"
unit=granule-node-agent.service
unit_file="/etc/systemd/system/$unit"

run() {
  if [ "$dry_run" = 1 ]; then echo "would run: $*"; else "$@"; fi
}

fail() { echo "install.sh: $*" >&2; exit 1; }

if [ "$dry_run" = 0 ] && [ "$(id -u)" != 0 ]; then
  fail "must run as root: it writes $prefix, $conf_dir and $unit_file and manages the service. Use sudo, or --dry-run to see the steps."
fi
[ -f "$source_dir/dist/apps/node-agent/src/main.js" ] || fail "no built agent in $source_dir/dist: run 'npm run build' there first (or pass --source DIR)"
[ -d "$source_dir/node_modules" ] || fail "no node_modules in $source_dir: run 'npm ci' there first"
command -v node >/dev/null || fail "node (Node.js 20 or later) is not installed"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || fail "Node.js 20 or later is needed, found $(node --version)"
command -v systemctl >/dev/null || [ "$dry_run" = 1 ] || fail "systemctl not found: this installer needs systemd"

echo "installing the Granule node agent from $source_dir to $prefix"
if [ -x "$source_dir/dist/libs/infra/task-runners/native/build/granule-spawn" ]; then
  echo "task processes will be started by the native spawn helper (granule-spawn)"
else
  echo "note: dist has no native spawn helper (built without a C compiler); the agent will start tasks with Node.js's child_process"
fi
run mkdir -p "$prefix" "$prefix/deploy/node-agent"
for part in dist node_modules; do
  if command -v rsync >/dev/null; then
    run rsync -a --delete "$source_dir/$part/" "$prefix/$part/"
  else
    run rm -rf "$prefix/$part.new"
    run cp -a "$source_dir/$part" "$prefix/$part.new"
    run rm -rf "$prefix/$part"
    run mv "$prefix/$part.new" "$prefix/$part"
  fi
done
run install -m 0644 "$source_dir/package.json" "$prefix/package.json"
run install -m 0644 "$here/README.md" "$here/$unit" "$prefix/deploy/node-agent/"

if [ -f "$env_file" ]; then
  echo "keeping the existing $env_file"
else
  template="# Granule node agent settings (read by $unit). See $prefix/deploy/node-agent/README.md.
GRANULE_NODE_UID=$node_uid
GRANULE_ROOT=/var/lib/granule
# Directories file tasks may write under (comma-separated); default: GRANULE_ROOT only.
#GRANULE_ALLOWED_ROOTS=/var/lib/granule,/etc/myapp
GRANULE_NATS_URL=nats://127.0.0.1:4222
# This node's credential (granule agent enroll $node_uid --out ...); mode 0600, owned by root.
#GRANULE_NATS_CREDS=/etc/granule/node-agent.creds
#GRANULE_NATS_TLS_CA=/etc/granule/nats-ca.pem
#GRANULE_SUBJECT_PREFIX=granule
#GRANULE_AGENT_TOKEN=
#GRANULE_HEARTBEAT_SECONDS=2
#GRANULE_REBOOT_COMMAND=systemctl reboot
#GRANULE_AGENT_HOSTNAME=
#GRANULE_AGENT_ADDRESS=
#GRANULE_LOG_LEVEL=info"
  if [ "$dry_run" = 1 ]; then
    echo "would write $env_file (mode 0600):"
    printf '%s\n' "$template" | sed 's/^/    /'
  else
    mkdir -p "$conf_dir"
    (umask 077 && printf '%s\n' "$template" >"$env_file")
    echo "wrote $env_file: set GRANULE_NATS_URL to the Granule NATS and GRANULE_NATS_CREDS to this node's credential, then run: systemctl restart $unit"
  fi
fi

run install -m 0644 "$here/$unit" "$unit_file"
run systemctl daemon-reload
run systemctl enable "$unit"
# restart: starts a stopped agent and moves a running one to the new tree.
run systemctl restart "$unit"
[ "$dry_run" = 1 ] || echo "done: 'systemctl status $unit' and 'journalctl -u $unit -f' show how it runs"
