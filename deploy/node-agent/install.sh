#!/usr/bin/env bash
# Installs (or upgrades) the Granule node agent from an agent package (`granule agent package`
# builds one; README.md beside this script, ADR 0027). Run it from the extracted package.
# Idempotent: run a newer package's install.sh to upgrade; an existing agent.env is kept.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: install.sh [options]

Installs the agent of this package to /opt/granule-agent/<version> (and points
/opt/granule-agent/current at it), writes /etc/granule/agent.env when it does not exist,
installs the credential given with --creds as /etc/granule/agent.creds (mode 0600) and the
systemd unit granule-agent.service, enables and (re)starts it.

  --node-uid UID        GRANULE_NODE_UID for a new agent.env (default: the short host name)
  --nats-url URL        GRANULE_NATS_URL for a new agent.env (default: nats://127.0.0.1:4222)
  --subject-prefix P    GRANULE_SUBJECT_PREFIX for a new agent.env (default: granule)
  --creds FILE          this node's credential (granule agent enroll UID --out FILE)
  --state-dir DIR       GRANULE_ROOT for a new agent.env (default: /var/lib/granule-agent)
  --protect-home MODE   the unit's ProtectHome: no (default), read-only, tmpfs or yes
  --node PATH           the Node.js to run the agent with (default: node on PATH)
  --allow-eol-node      accept Node.js 20 (past its end of life) with a warning
  --root DIR            install under DIR instead of /: no root needed, no systemctl; the
                        paths written into agent.env and the unit are those the host sees
                        once DIR is its / (a chroot, container or mount namespace)
  --no-start            install and enable, do not (re)start the service
  --dry-run             print what would be done, change nothing
USAGE
}

# The node uid rule of libs/domain/core (IDENTIFIER_RULES.nodeUid); test/packaging/node-uid-rule.spec.ts checks
# that these two lines equal it.
NODE_UID_RE='^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$'
NODE_UID_RULE="1 to 63 letters, digits, '_' or '-', starting with a letter or digit"
# In the C locale ranges such as A-Z are ASCII only, as in the TS rule.
valid_uid() { local LC_ALL=C; [[ "$1" =~ $NODE_UID_RE ]]; }

# The oldest maintained Node.js LTS; Node 20 (end of life April 2026) only with --allow-eol-node.
MIN_NODE=22
EOL_NODE=20

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage_error() { echo "install.sh: $*" >&2; exit 2; }
fail() { echo "install.sh: $*" >&2; exit 1; }

dry_run=0 no_start=0 allow_eol=0
root="" node_uid="" nats_url="" subject_prefix="" creds="" state_dir="" protect_home=no node_bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --no-start) no_start=1 ;;
    --allow-eol-node) allow_eol=1 ;;
    --root) root="${2:?--root needs a directory}"; shift ;;
    --node-uid) node_uid="${2:?--node-uid needs a value}"; shift ;;
    --nats-url) nats_url="${2:?--nats-url needs a URL}"; shift ;;
    --subject-prefix) subject_prefix="${2:?--subject-prefix needs a value}"; shift ;;
    --creds) creds="${2:?--creds needs a file}"; shift ;;
    --state-dir) state_dir="${2:?--state-dir needs a directory}"; shift ;;
    --protect-home) protect_home="${2:?--protect-home needs a mode}"; shift ;;
    --node) node_bin="${2:?--node needs the path of node}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

if [ -n "$node_uid" ]; then
  valid_uid "$node_uid" || usage_error "--node-uid: expected a node uid of $NODE_UID_RULE, got '$node_uid'"
else
  # The short host name, made into a uid: other characters become '_', at most 63 of them.
  host="$(hostname -s 2>/dev/null || hostname)"
  node_uid="$(printf '%s' "$host" | tr -c 'A-Za-z0-9_\n-' '_' | cut -c1-63)"
  valid_uid "$node_uid" || usage_error "the host name '$host' does not make a node uid ($NODE_UID_RULE): pass --node-uid"
fi
case "$protect_home" in
  no|read-only|tmpfs|yes) ;;
  *) usage_error "--protect-home: expected no, read-only, tmpfs or yes, got '$protect_home'" ;;
esac
case "$state_dir" in
  ""|/*) ;;
  *) usage_error "--state-dir: expected an absolute directory, got '$state_dir'" ;;
esac
if [ -n "$root" ]; then
  case "$root" in /*) ;; *) root="$(pwd)/$root" ;; esac
  root="${root%/}"
fi
if [ -n "$creds" ]; then
  [ -r "$creds" ] || usage_error "--creds: cannot read '$creds'"
  grep -q -- '-----BEGIN NATS USER JWT-----' "$creds" ||
    usage_error "--creds: '$creds' is not a NATS credential (no 'BEGIN NATS USER JWT' line); make one with: granule agent enroll $node_uid --out FILE"
fi

[ -f "$here/app/node-agent.js" ] && [ -f "$here/VERSION" ] ||
  fail "no agent package in $here: install.sh runs from an extracted agent package (granule agent package builds one; see deploy/node-agent/README.md)"
version="$(tr -d '[:space:]' <"$here/VERSION")"

if [ -z "$root" ] && [ "$dry_run" = 0 ] && [ "$(id -u)" != 0 ]; then
  fail "must run as root: it writes /opt/granule-agent, /etc/granule and the systemd unit and manages the service. Use sudo, --root DIR, or --dry-run to see the steps."
fi

# Node.js: the one the unit will run, checked here so the agent does not fail at every restart.
if [ -z "$node_bin" ]; then
  node_bin="$(command -v node || true)"
  [ -n "$node_bin" ] || fail "Node.js is not installed (no node on PATH): install Node.js $MIN_NODE or later (a maintained LTS, e.g. 22 or 24), or pass --node PATH"
fi
case "$node_bin" in /*) ;; *) node_bin="$(cd "$(dirname "$node_bin")" && pwd)/$(basename "$node_bin")" ;; esac
node_version="$("$node_bin" -p 'process.versions.node' 2>/dev/null)" || fail "cannot run $node_bin to read its version"
node_major="${node_version%%.*}"
case "$node_major" in
  ''|*[!0-9]*) fail "cannot read the version of $node_bin: it printed '$node_version' for process.versions.node" ;;
esac
if [ "$node_major" -lt "$EOL_NODE" ]; then
  fail "Node.js $MIN_NODE or later (a maintained LTS) is needed, found v$node_version at $node_bin"
elif [ "$node_major" -lt "$MIN_NODE" ]; then
  [ "$allow_eol" = 1 ] ||
    fail "Node.js $MIN_NODE or later (a maintained LTS) is needed, found v$node_version at $node_bin: install Node.js 22 or 24, or pass --allow-eol-node to run on Node.js $EOL_NODE (past its end of life: no security fixes)"
  echo "warning: Node.js v$node_version is past its end of life (April 2026): the agent runs on it, but install Node.js 22 or 24" >&2
fi
if [ -z "$root" ] && [ "$dry_run" = 0 ]; then
  command -v systemctl >/dev/null || fail "systemctl not found: this installer needs systemd (or --root DIR to only place the files)"
fi

opt_dir=/opt/granule-agent
conf_dir=/etc/granule
env_file=$conf_dir/agent.env
creds_file=$conf_dir/agent.creds
unit=granule-agent.service
unit_file=/etc/systemd/system/$unit
old_unit=granule-node-agent.service
: "${state_dir:=/var/lib/granule-agent}"
R="$root"

run() {
  if [ "$dry_run" = 1 ]; then echo "would run: $*"; else "$@"; fi
}

echo "installing the Granule node agent $version to ${R}$opt_dir/$version (Node.js v$node_version at $node_bin)"

# 1. The package's files, beside the running version until they are complete.
dest="${R}$opt_dir/$version"
stage="${R}$opt_dir/.$version.new-$$"
run mkdir -p "${R}$opt_dir"
run rm -rf "$stage"
run mkdir -p "$stage"
for f in app native VERSION manifest.json README.md install.sh uninstall.sh granule-agent.service; do
  [ -e "$here/$f" ] && run cp -R "$here/$f" "$stage/"
done

# 2. The native spawn helper (ADR 0009): built for this host where it has a C compiler, else the
#    package's prebuilt binary when it runs here, else the agent starts tasks with child_process.
helper="$stage/native/build/granule-spawn"
cc=""
for c in "${CC:-}" cc gcc clang; do
  [ -n "$c" ] && command -v "$c" >/dev/null && { cc="$c"; break; }
done
prebuilt="$here/native/prebuilt/granule-spawn-$(uname -m)"
native=""
if [ "$dry_run" = 1 ]; then
  echo "would build the native spawn helper with ${cc:-no C compiler} (else use $prebuilt if it runs here)"
else
  mkdir -p "$(dirname "$helper")"
  if [ -n "$cc" ]; then
    flags=(-std=gnu99 -O2 -Wall -Wextra -o "$helper" "$stage/native/granule-spawn.c")
    if "$cc" -static "${flags[@]}" 2>/dev/null || err="$("$cc" "${flags[@]}" 2>&1)"; then
      native="built with $cc"
    else
      echo "warning: $cc could not build the native spawn helper: $(printf '%s' "$err" | head -n 1)" >&2
    fi
  fi
  if [ -z "$native" ] && [ -f "$prebuilt" ] && "$prebuilt" </dev/null >/dev/null 2>&1; then
    cp "$prebuilt" "$helper" && chmod 0755 "$helper"
    native="the package's prebuilt binary for $(uname -m)"
  fi
  if [ -n "$native" ]; then
    echo "task processes will be started by the native spawn helper granule-spawn ($native)"
  else
    rm -f "$helper"
    echo "note: no native spawn helper (no C compiler, and no prebuilt binary for $(uname -m) that runs here): the agent will start tasks with Node.js's child_process (same behaviour, about 1 ms more CPU per task; install gcc and run install.sh again to get it)"
  fi
fi

# 3. Swap the version in, then point `current` at it (a relative link: it also holds under --root).
if [ -e "$dest" ]; then
  run mv "$dest" "${R}$opt_dir/.$version.old-$$"
fi
run mv "$stage" "$dest"
run rm -rf "${R}$opt_dir/.$version.old-$$"
run ln -sfn "$version" "${R}$opt_dir/.current.new-$$"
run mv -T "${R}$opt_dir/.current.new-$$" "${R}$opt_dir/current"

# 4. Settings: written once; an existing file is the operator's.
run mkdir -p "${R}$conf_dir"
if [ -n "$creds" ]; then
  run install -m 0600 "$creds" "${R}$creds_file"
  [ "$dry_run" = 1 ] || echo "installed the credential as ${R}$creds_file (mode 0600)"
fi
creds_line="#GRANULE_NATS_CREDS=$creds_file"
[ -n "$creds" ] && creds_line="GRANULE_NATS_CREDS=$creds_file"
if [ -f "${R}$env_file" ]; then
  echo "keeping the existing ${R}$env_file"
  if [ -n "$creds" ] && ! grep -q "^GRANULE_NATS_CREDS=" "${R}$env_file"; then
    echo "note: ${R}$env_file sets no GRANULE_NATS_CREDS: add GRANULE_NATS_CREDS=$creds_file to use the credential" >&2
  fi
elif [ -z "$R" ] && [ -f "$conf_dir/node-agent.env" ]; then
  # The settings of the installer this package replaced (deploy/node-agent/install.sh before ADR 0027).
  run install -m 0600 "$conf_dir/node-agent.env" "$env_file"
  echo "copied the settings of the previous installation ($conf_dir/node-agent.env) to $env_file"
else
  template="# Granule node agent settings, read by $unit. See $opt_dir/current/README.md.
# The agent connects only to NATS.
GRANULE_NODE_UID=$node_uid
GRANULE_NATS_URL=${nats_url:-nats://127.0.0.1:4222}
GRANULE_SUBJECT_PREFIX=${subject_prefix:-granule}
# This node's credential (granule agent enroll $node_uid --out FILE); mode 0600, owned by root.
$creds_line
GRANULE_ROOT=$state_dir
# Directories file tasks may write under (comma-separated); default: GRANULE_ROOT only.
#GRANULE_ALLOWED_ROOTS=$state_dir,/etc/myapp
#GRANULE_NATS_TLS_CA=$conf_dir/nats-ca.pem
#GRANULE_AGENT_TOKEN=
#GRANULE_HEARTBEAT_SECONDS=2
#GRANULE_REBOOT_COMMAND=systemctl reboot
#GRANULE_SPAWN_HELPER=auto
# What copies of plugin/release packages may take on disk; least recently used go first.
#GRANULE_ARTIFACT_CACHE_MB=2048
#GRANULE_HEALTH_PORT=8414
#GRANULE_AGENT_HOSTNAME=
#GRANULE_AGENT_ADDRESS=
#GRANULE_LOG_LEVEL=info"
  if [ "$dry_run" = 1 ]; then
    echo "would write ${R}$env_file (mode 0600):"
    printf '%s\n' "$template" | sed 's/^/    /'
  else
    (umask 077 && printf '%s\n' "$template" >"${R}$env_file")
    echo "wrote ${R}$env_file (node $node_uid, NATS ${nats_url:-nats://127.0.0.1:4222})"
  fi
fi

# 5. The unit, with the Node.js checked above.
run mkdir -p "$(dirname "${R}$unit_file")"
if [ "$dry_run" = 1 ]; then
  echo "would write ${R}$unit_file (ExecStart=$node_bin ..., ProtectHome=$protect_home)"
else
  sed -e "s|@NODE@|$node_bin|g" -e "s|@PROTECT_HOME@|$protect_home|g" "$here/granule-agent.service" >"${R}$unit_file.new-$$"
  chmod 0644 "${R}$unit_file.new-$$"
  mv "${R}$unit_file.new-$$" "${R}$unit_file"
fi

if [ -n "$R" ]; then
  echo "done: installed under $R (no service started). Run it with the settings of $R$env_file:"
  echo "  $node_bin $R$opt_dir/current/app/node-agent.js"
  exit 0
fi

# The unit of the installer this package replaced ran the agent from /opt/granule.
if [ -f "/etc/systemd/system/$old_unit" ]; then
  run systemctl disable --now "$old_unit" || true
  run rm -f "/etc/systemd/system/$old_unit"
  echo "retired $old_unit; /opt/granule (its tree) is no longer used and can be removed"
fi
run systemctl daemon-reload
run systemctl enable "$unit"
if [ "$no_start" = 1 ]; then
  echo "done: start it with 'systemctl start $unit'"
else
  # restart: starts a stopped agent and moves a running one to the new version.
  run systemctl restart "$unit"
  [ "$dry_run" = 1 ] || echo "done: 'systemctl status $unit' and 'journalctl -u $unit -f' show how it runs"
fi
