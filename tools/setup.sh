#!/usr/bin/env bash
# Idempotent machine set-up shared by the quick start and CI:
#   npm packages, Debian packages (puppet, rsync) and the three services Granule talks to.
# A service already answering at its configured address is used as it is. These are development
# servers for the integration tests of single components (NATS without authorization, Redis
# without a password); the demo, the end-to-end tests and the benchmarks start authenticated
# servers of their own on other ports, as an installation runs them (README, Security).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }

PG_HOST=${GRANULE_PG_HOST:-127.0.0.1}; PG_PORT=${GRANULE_PG_PORT:-5432}
REDIS_HOST=${GRANULE_REDIS_HOST:-127.0.0.1}; REDIS_PORT=${GRANULE_REDIS_PORT:-6379}
NATS_HOST=${GRANULE_NATS_HOST:-127.0.0.1}; NATS_PORT=${GRANULE_NATS_PORT:-4222}

listening() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
wait_for() { # name host port
  for _ in $(seq 1 50); do listening "$2" "$3" && return 0; sleep 0.2; done
  log "$1 did not come up at $2:$3"; return 1
}
is_root() { [ "$(id -u)" = 0 ]; }
apt_updated=0
apt_install() {
  if ! is_root; then log "missing Debian packages: $* — install them with: sudo apt-get install -y $*"; return 1; fi
  if [ $apt_updated = 0 ]; then DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null; apt_updated=1; fi
  log "installing Debian packages: $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --- npm packages -----------------------------------------------------------
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# --- tools the node-agent drives on hosts ------------------------------------
missing=()
command -v rsync >/dev/null || missing+=(rsync)
command -v puppet >/dev/null || [ -x /usr/bin/puppet ] || missing+=(puppet)
# A C compiler for the node-agent's native spawn helper (tools/build-native.mjs, ADR 0009).
command -v cc >/dev/null || missing+=(gcc libc6-dev)
# The multi-host test tier's hosts are network namespaces (test/fleet, README).
command -v ip >/dev/null || missing+=(iproute2)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}" || log "continuing without: ${missing[*]}"; fi

# --- PostgreSQL ---------------------------------------------------------------
if ! listening "$PG_HOST" "$PG_PORT"; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    log "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
  else
    apt_install postgresql && pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start \
      || { log "PostgreSQL is not reachable at $PG_HOST:$PG_PORT: install it (apt-get install postgresql) or run: docker compose up -d postgres"; exit 1; }
  fi
  wait_for PostgreSQL "$PG_HOST" "$PG_PORT"
fi

# --- Redis --------------------------------------------------------------------
if ! listening "$REDIS_HOST" "$REDIS_PORT"; then
  command -v redis-server >/dev/null || apt_install redis-server \
    || { log "Redis is not reachable at $REDIS_HOST:$REDIS_PORT: install it (apt-get install redis-server) or run: docker compose up -d redis"; exit 1; }
  log "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no >/dev/null
  wait_for Redis "$REDIS_HOST" "$REDIS_PORT"
fi

# --- NATS with JetStream ------------------------------------------------------
if ! listening "$NATS_HOST" "$NATS_PORT"; then
  command -v nats-server >/dev/null || apt_install nats-server \
    || { log "NATS is not reachable at $NATS_HOST:$NATS_PORT: install nats-server or run: docker compose up -d nats"; exit 1; }
  sd=${GRANULE_NATS_STORE:-/tmp/granule-nats}
  mkdir -p "$sd"
  log "starting NATS (JetStream store $sd)"
  nohup nats-server -a 127.0.0.1 -p "$NATS_PORT" -js -sd "$sd" >"$sd/nats.log" 2>&1 &
  wait_for NATS "$NATS_HOST" "$NATS_PORT"
fi
log "ready: PostgreSQL $PG_HOST:$PG_PORT, Redis $REDIS_HOST:$REDIS_PORT, NATS $NATS_HOST:$NATS_PORT"
