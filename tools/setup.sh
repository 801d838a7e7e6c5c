#!/usr/bin/env bash
# Idempotent machine set-up shared by the quick start and CI:
#   npm packages, Debian packages (puppet, rsync) and the three services Granule talks to.
# A service already answering at its configured address is used as it is (the machine's NATS
# on 4222 and Redis on 6379 are never reconfigured).
# Besides, the project's own servers, authorized as an installation runs them: a nats-server with
# authorization on (the project's server configuration and a trust store made here) on
# $GRANULE_TEST_NATS_PORT (4333) and a redis-server with a password on $GRANULE_TEST_REDIS_PORT
# (6383), their state in $GRANULE_TEST_SERVICES_DIR (/tmp/granule-test-services). The integration
# tests connect there with the harness credential; connection.json in that folder says how
# (libs/infra/messaging/src/testing/test-services.ts). A second run reuses the running servers.
# The demo, the end-to-end tests and the benchmarks start servers of their own (README, Security).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }

PG_HOST=${GRANULE_PG_HOST:-127.0.0.1}; PG_PORT=${GRANULE_PG_PORT:-5432}
REDIS_HOST=${GRANULE_REDIS_HOST:-127.0.0.1}; REDIS_PORT=${GRANULE_REDIS_PORT:-6379}
NATS_HOST=${GRANULE_NATS_HOST:-127.0.0.1}; NATS_PORT=${GRANULE_NATS_PORT:-4222}
TEST_DIR=${GRANULE_TEST_SERVICES_DIR:-/tmp/granule-test-services}
TEST_NATS_PORT=${GRANULE_TEST_NATS_PORT:-4333}; TEST_REDIS_PORT=${GRANULE_TEST_REDIS_PORT:-6383}

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
# A node_modules that links to another checkout's is that checkout's to keep up to date: npm ci
# would empty the linked folder.
if [ -L node_modules ]; then
  log "node_modules links to $(readlink node_modules): leaving it as it is"
elif [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
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

# --- the project's own NATS (authorization on) and Redis (a password) for the tests ---------
# Each server's pid is kept beside its state: a port that answers with no pid of ours there is
# someone else's, and is refused rather than used with credentials it would not know.
ours() { [ -f "$TEST_DIR/$1.pid" ] && kill -0 "$(cat "$TEST_DIR/$1.pid")" 2>/dev/null; }
command -v nats-server >/dev/null || apt_install nats-server || { log "the tests need nats-server: install it"; exit 1; }
command -v redis-server >/dev/null || apt_install redis-server || { log "the tests need redis-server: install it"; exit 1; }
node tools/test-services.mjs init "$TEST_DIR" "$TEST_NATS_PORT"
if ! ours nats; then
  if listening 127.0.0.1 "$TEST_NATS_PORT"; then
    log "port $TEST_NATS_PORT is taken by another process: set GRANULE_TEST_NATS_PORT to a free port"; exit 1
  fi
  log "starting the tests' NATS with authorization on (127.0.0.1:$TEST_NATS_PORT, $TEST_DIR)"
  nohup nats-server -c "$TEST_DIR/nats.conf" >"$TEST_DIR/nats.log" 2>&1 &
  echo $! >"$TEST_DIR/nats.pid"
  wait_for "the tests' NATS" 127.0.0.1 "$TEST_NATS_PORT"
fi
if ! ours redis; then
  if listening 127.0.0.1 "$TEST_REDIS_PORT"; then
    log "port $TEST_REDIS_PORT is taken by another process: set GRANULE_TEST_REDIS_PORT to a free port"; exit 1
  fi
  log "starting the tests' Redis with a password (127.0.0.1:$TEST_REDIS_PORT)"
  # The password reaches redis-server on its standard input, never on a command line (ps shows those).
  printf 'requirepass %s\n' "$(cat "$TEST_DIR/redis.password")" | nohup redis-server - --bind 127.0.0.1 \
    --port "$TEST_REDIS_PORT" --save "" --appendonly no >"$TEST_DIR/redis.log" 2>&1 &
  echo $! >"$TEST_DIR/redis.pid"
  wait_for "the tests' Redis" 127.0.0.1 "$TEST_REDIS_PORT"
fi
(umask 077 && printf '{\n  "natsUrl": "nats://127.0.0.1:%s",\n  "natsCreds": "%s",\n  "orchestratorCreds": "%s",\n  "redisUrl": "redis://:%s@127.0.0.1:%s"\n}\n' \
  "$TEST_NATS_PORT" "$TEST_DIR/int-tests.creds" "$TEST_DIR/int-orchestrator.creds" "$(cat "$TEST_DIR/redis.password")" "$TEST_REDIS_PORT" \
  >"$TEST_DIR/connection.json")
log "ready: PostgreSQL $PG_HOST:$PG_PORT, Redis $REDIS_HOST:$REDIS_PORT, NATS $NATS_HOST:$NATS_PORT;" \
  "the tests' NATS 127.0.0.1:$TEST_NATS_PORT and Redis 127.0.0.1:$TEST_REDIS_PORT ($TEST_DIR/connection.json)"
