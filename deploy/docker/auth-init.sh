#!/bin/sh
# docker-compose.yml's one-shot `auth-init`: creates the NATS trust store once (granule auth
# init; its keys stay in the trust volume, which nothing else mounts), enrolls the compose node
# agents, and hands out copies: nats-auth.conf (no secret in it) to NATS, and to each service
# and agent its own .creds only, owned by the user that service runs as. Run again, it keeps the
# store and the credentials it issued and copies them again.
set -eu

STORE=${GRANULE_AUTH_DIR:-/var/lib/granule-auth}
OUT=${GRANULE_AUTH_OUT:-/out}
CLI=${GRANULE_CLI:-granule}
# The services' images run as `node` (uid 1000); the agents' as root.
SERVICE_UID=${GRANULE_SERVICE_UID:-1000}

if [ ! -f "$STORE/operator.nk" ]; then
  $CLI auth init "$STORE" --prefix "${GRANULE_SUBJECT_PREFIX:-granule}"
fi
for node in ${GRANULE_AGENT_NODES:-}; do
  if [ ! -s "$STORE/creds/agent-$node.creds" ]; then
    # --no-record: NATS and config-store do not run yet (granule agent record NODE records it later).
    $CLI agent enroll "$node" --auth-dir "$STORE" --no-record --out "$STORE/creds/agent-$node.creds"
  fi
done

install -D -m 0644 "$STORE/nats-auth.conf" "$OUT/nats/nats-auth.conf"
for service in orchestrator config-store graph-planner; do
  install -D -m 0400 -o "$SERVICE_UID" -g "$SERVICE_UID" "$STORE/creds/$service.creds" "$OUT/$service/nats.creds"
done
for node in ${GRANULE_AGENT_NODES:-}; do
  install -D -m 0400 -o 0 -g 0 "$STORE/creds/agent-$node.creds" "$OUT/agent-$node/nats.creds"
done
echo "auth-init: trust store $STORE; nats-auth.conf and each service's and agent's .creds handed out"
