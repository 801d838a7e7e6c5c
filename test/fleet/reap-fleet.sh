#!/bin/sh
# Removes a fleet and the stack of its test once the test process is gone, however it went (a
# failed assertion that skipped afterAll, SIGINT, SIGTERM from `timeout`, SIGKILL). netns.ts
# starts it in a session of its own, so a Ctrl-C to the test's process group does not reach it,
# and kills it when the fleet is torn down normally.
#
#   reap-fleet.sh OWNER_PID FLEET_DIR DATABASE_ADMIN_URL
#
# While the owner lives it notes the owner's descendants once a second (the stack's nats-server,
# redis-server, services, CLI runs); once the owner is gone it kills those still there, then
# every process in the fleet's namespaces, and removes the namespaces, links, the fleet's and
# the stack's directories (/tmp/granule-e2e-fleet<owner>-*, the private servers' stores) and
# the stack's database (granule_test_e2e_fleet<owner>_*).
set -u
owner="$1"
dir="$2"
admin_url="$3"
tmp="$(dirname "$dir")"

descendants() {
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    [ "$c" = "$$" ] && continue
    echo "$c"
    descendants "$c"
  done
}
# A pid with its start time, so a pid reused after the owner's end is never killed.
started() { sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | cut -d' ' -f20; }

state() { sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | cut -d' ' -f1; }
owner_started="$(started "$owner")"
# Alive: there, not a zombie (a killed owner's parent may not have reaped it yet), not a reused pid.
alive() { [ "$(started "$owner")" = "$owner_started" ] && [ "$(state "$owner")" != Z ]; }

seen=""
while alive; do
  now="$(for p in $(descendants "$owner"); do echo "$p:$(started "$p")"; done)"
  # A list taken while the owner died misses its children (already handed to init): keep the last whole one.
  if alive; then seen="$now"; fi
  sleep 1
done

stores=""
for entry in $seen; do
  pid="${entry%%:*}"
  [ "$(started "$pid")" = "${entry#*:}" ] || continue
  stores="$stores $(tr '\0' '\n' < /proc/"$pid"/cmdline | grep -o "$tmp/granule-private-[a-z]*-[A-Za-z0-9]*")"
  kill -9 "$pid" 2>/dev/null
done

for ns in $(ip netns list | awk '{print $1}' | grep "^gfleet-$owner-"); do
  for pid in $(ip netns pids "$ns"); do kill -9 "$pid" 2>/dev/null; done
  ip netns del "$ns"
done
for link in $(ip -o link show | sed -n "s/^[0-9]*: \(gf$owner[bh][^:@]*\).*/\1/p"); do
  ip link del "$link" 2>/dev/null
done
case "$dir" in
  */granule-fleet-"$owner"-*) rm -rf "$dir" ;;
esac
for store in $stores; do rm -rf "$store"; done
rm -rf "$tmp"/granule-e2e-fleet"$owner"-*
if command -v psql > /dev/null; then
  for db in $(psql "$admin_url" -Atc "SELECT datname FROM pg_database WHERE datname LIKE 'granule\\_test\\_e2e\\_fleet${owner}\\_%'"); do
    psql "$admin_url" -qc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)"
  done
fi
