# Pieces of tools/demo.sh that test/e2e/demo-script.e2e.spec.ts runs on their own (sourced;
# no side effects).

# The health port of demo agent $1 (1-4). On a real fleet every agent has its host to itself;
# here four share one, so each gets its own port (AGENT_HEALTH_BASE + uid, 8421-8424) instead of
# all asking for the default 8414.
demo_health_port() { echo $((${AGENT_HEALTH_BASE:-8420} + $1)); }

# The closing hints: commands to paste. With DEMO_KEEP=1 the services answer them; without,
# only the offline plan does, and the hint says how to keep the services up. Reads RELEASE,
# DEMO_DIR, db and, with DEMO_KEEP=1, GRANULE_NATS_URL, GRANULE_SUBJECT_PREFIX, GRANULE_NATS_CREDS.
demo_hints() {
  local offline="./granule plan --release $RELEASE --nodes $RELEASE/nodes.yaml --simulate -o table"
  if [ "${DEMO_KEEP:-}" = 1 ]; then
    cat <<EOF

Next (the services keep running; paste these here):
  export GRANULE_NATS_URL=$GRANULE_NATS_URL GRANULE_SUBJECT_PREFIX=$GRANULE_SUBJECT_PREFIX GRANULE_NATS_CREDS=$GRANULE_NATS_CREDS
  ./granule runs list
  ./granule runs events demo-1                     # add --at N: the run as it was after event N
  ./granule runs show demo-1                       # says who asked for it: demo-operator
  ./granule audit list                             # who changed the configuration
  ./granule graph --run demo-1-2-deploy -o dot     # a phase run, coloured by outcome
  ./granule graph --env demo -o mermaid
  curl -s http://127.0.0.1:$(demo_health_port 1)/readyz               # agent 1's health; agents 2-4 use the next ports
  $offline
Logs: $DEMO_DIR/logs   Data: database $db, $DEMO_DIR
EOF
  else
    cat <<EOF

The services stop as the demo ends. To look around afterwards (runs list, runs events demo-1, graph --env demo),
run the demo with them kept up:  DEMO_KEEP=1 bash tools/demo.sh
Offline, no services needed:
  $offline
Logs: $DEMO_DIR/logs   Data: database $db, $DEMO_DIR
EOF
  fi
}
