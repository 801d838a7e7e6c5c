#!/usr/bin/env bash
# Quick-start demo: sets the machine up, starts config-store, graph-planner, orchestrator and
# four local node agents, installs the example release and a plugin, creates an environment,
# registers and assigns the nodes, uploads a deployment strategy, deploys with live progress
# and prints the recap. The services stop when the demo ends (DEMO_KEEP=1 keeps them running);
# the demo's data stays in the database granule_demo and under $DEMO_DIR for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."

export GRANULE_SUBJECT_PREFIX=${GRANULE_SUBJECT_PREFIX:-demo}
export GRANULE_DATABASE_URL=${GRANULE_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/granule_demo}
DEMO_DIR=${DEMO_DIR:-/tmp/granule-demo}
# The demo's own NATS (authorization on) and Redis (a password), as an installation runs them.
DEMO_NATS_PORT=${DEMO_NATS_PORT:-4322}
DEMO_REDIS_PORT=${DEMO_REDIS_PORT:-6380}
AUTH=$DEMO_DIR/auth
RELEASE=examples/releases/example-release
# shellcheck source=tools/demo-lib.sh
source tools/demo-lib.sh
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "setting up (npm packages, PostgreSQL, Redis, NATS, puppet, rsync)"
bash tools/setup.sh
bash tools/ensure-built.sh

step "fresh demo state: database $(basename "$GRANULE_DATABASE_URL"), subjects $GRANULE_SUBJECT_PREFIX.*, everything else in $DEMO_DIR"
# A previous demo kept up (DEMO_KEEP=1) is stopped first: its servers hold the demo's ports.
if [ -f "$DEMO_DIR/pids" ]; then
  kill $(cat "$DEMO_DIR/pids") 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 $(cat "$DEMO_DIR/pids") 2>/dev/null || break; sleep 0.1; done
fi
db=$(basename "$GRANULE_DATABASE_URL")
pgadmin=${GRANULE_DATABASE_URL%/*}/postgres
psql -q "$pgadmin" -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" -c "CREATE DATABASE \"$db\"" >/dev/null
rm -rf "$DEMO_DIR" && mkdir -p "$DEMO_DIR/logs"

pids=()
cleanup() {
  if [ "${DEMO_KEEP:-}" = 1 ]; then
    echo "services keep running (pids ${pids[*]}); stop them with: kill \$(cat $DEMO_DIR/pids)"
    return
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f "$DEMO_DIR/pids"
}
trap cleanup EXIT
start() { # name, command...
  local name=$1; shift
  "$@" >"$DEMO_DIR/logs/$name.log" 2>&1 &
  pids+=($!)
  echo $! >>"$DEMO_DIR/pids"
}
wait_for() { # description, command
  for _ in $(seq 1 100); do eval "$2" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "$1 did not come up; see $DEMO_DIR/logs" >&2; exit 1
}
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
creds() { echo "$AUTH/creds/$1.creds"; }
# Runs a command as identity $1 (its credential), e.g. a service or the admin.
as_identity() { local who=$1; shift; GRANULE_NATS_CREDS=$(creds "$who") "$@"; }

step "securing it: a trust store, NATS with authorization on (port $DEMO_NATS_PORT), Redis with a password (port $DEMO_REDIS_PORT), a secrets key"
for port in "$DEMO_NATS_PORT" "$DEMO_REDIS_PORT"; do
  if listening "$port"; then echo "port $port is taken: set DEMO_NATS_PORT / DEMO_REDIS_PORT to free ports" >&2; exit 1; fi
done
# Each service, each agent and the operator get a credential of their own (docs/architecture.md, Security model).
./granule auth init "$AUTH" --prefix "$GRANULE_SUBJECT_PREFIX" | sed 's/^/  /'
./granule auth issue demo-operator --role operator --auth-dir "$AUTH" --out "$(creds demo-operator)" | sed 's/^/  /'
printf '%s\n' 'host: 127.0.0.1' "port: $DEMO_NATS_PORT" "jetstream { store_dir: \"$DEMO_DIR/nats-store\" }" \
  'include "auth/nats-auth.conf"' >"$DEMO_DIR/nats.conf"
start nats nats-server -c "$DEMO_DIR/nats.conf"
(umask 077 && node -e "process.stdout.write(require('crypto').randomBytes(18).toString('hex'))" >"$DEMO_DIR/redis.password")
start redis redis-server --bind 127.0.0.1 --port "$DEMO_REDIS_PORT" --requirepass "$(cat "$DEMO_DIR/redis.password")" \
  --save "" --appendonly no
(umask 077 && ./granule secrets keygen >"$AUTH/secrets.env")
wait_for "NATS" "listening $DEMO_NATS_PORT"
wait_for "Redis" "listening $DEMO_REDIS_PORT"
export GRANULE_NATS_URL=nats://127.0.0.1:$DEMO_NATS_PORT
GRANULE_REDIS_URL=redis://:$(cat "$DEMO_DIR/redis.password")@127.0.0.1:$DEMO_REDIS_PORT
GRANULE_SECRETS_PUBLIC_KEY=$(sed -n 's/^GRANULE_SECRETS_PUBLIC_KEY=//p' "$AUTH/secrets.env")
export GRANULE_REDIS_URL GRANULE_SECRETS_PUBLIC_KEY
# The CLI runs as the operator; services and agents get their own credential as they start.
export GRANULE_NATS_CREDS
GRANULE_NATS_CREDS=$(creds demo-operator)

step "starting config-store, graph-planner, orchestrator"
GRANULE_RUN_MIGRATIONS=true GRANULE_PREINSTALLED_RELEASE= \
  as_identity config-store start config-store node dist/apps/config-store/src/main.js
wait_for "config-store" "./granule release list"
as_identity graph-planner start graph-planner node dist/apps/graph-planner/src/main.js
# Only the orchestrator holds the secrets key: it opens sealed values for the one agent a task goes to.
GRANULE_SECRETS_KEY=$(sed -n 's/^GRANULE_SECRETS_KEY=//p' "$AUTH/secrets.env") \
  as_identity orchestrator start orchestrator node dist/apps/orchestrator/src/main.js
wait_for "orchestrator" "./granule runs list"

step "enrolling 4 node agents (a credential bound to each node) and starting them (each a process with its own root directory and health port)"
for uid in 1 2 3 4; do
  # As the admin, so that config-store records the credential and node list shows it.
  as_identity admin ./granule agent enroll "$uid" --auth-dir "$AUTH" --expires 30d --out "$(creds "agent-$uid")" | sed 's/^/  /'
  # NATS is an agent's only connection: no Redis, no database.
  start "agent-$uid" env -u GRANULE_REDIS_URL -u GRANULE_DATABASE_URL GRANULE_NODE_UID="$uid" \
    GRANULE_ROOT="$DEMO_DIR/node-$uid" GRANULE_HEARTBEAT_SECONDS=1 GRANULE_HEALTH_PORT="$(demo_health_port "$uid")" \
    GRANULE_NATS_CREDS="$(creds "agent-$uid")" node dist/apps/node-agent/src/main.js
done
wait_for "agents" "[ \$(REDISCLI_AUTH=\$(cat $DEMO_DIR/redis.password) redis-cli -p $DEMO_REDIS_PORT --scan --pattern '$GRANULE_SUBJECT_PREFIX:presence:*' | wc -l) -ge 4 ]"

step "installing the example release and the example-v4 plugin"
./granule release install "$RELEASE"
./granule plugin install examples/plugins/example-v4

step "creating environment 'demo' with the plugin enabled"
./granule env create demo --release example-release --plugin example-v4

step "registering the nodes and assigning roles"
./granule node add 1 --hostname node-1 --roles controller --tags control --rack r1 --env demo
./granule node add 2 --hostname node-2 --roles compute --tags compute --rack r1 --env demo
./granule node add 3 --hostname node-3 --roles compute --tags compute --rack r2 --env demo
./granule node add 4 --hostname node-4 --roles storage --tags storage --rack r2 --env demo
./granule node list --env demo

step "uploading the deployment strategy"
./granule strategy upload "$RELEASE/strategy.yaml" --name example
./granule strategy plan "$RELEASE/strategy.yaml" --nodes "$RELEASE/nodes.yaml"

step "deploying environment 'demo' with strategy 'example' (live progress, then the recap)"
status=0
./granule deploy --env demo --strategy example --watch --run-id demo-1 || status=$?

step "node statuses in config-store (the orchestrator applies them from the event log within about a second)"
for _ in 1 2 3 4 5 6 7 8 9 10; do
  ./granule node list --env demo -o json | grep -q '"status": *"\(discover\|deploying\)"' || break
  sleep 0.5
done
./granule node list --env demo

step "what happened on the hosts"
for uid in 1 2 3 4; do echo "node-$uid:"; find "$DEMO_DIR/node-$uid/state" -type f 2>/dev/null | sed "s#$DEMO_DIR/##" | sed 's/^/  /'; done

demo_hints
exit $status
