#!/usr/bin/env bash
# Quick-start demo. Sets the machine up (npm packages, services) and shows Granule planning the
# example release: the plan, a simulated timeline with its critical path, and a strategy preview.
# The execution issue upgrades this to a real deployment on local agents.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
npm run -s build

release=examples/releases/example-release
nodes="$release/nodes.yaml"
tasks=(--release "$release" --plugin examples/plugins/example-v5 --plugin examples/plugins/example-v4)

echo; echo "== granule plugin validate =="
./granule plugin validate examples/plugins/example-v5

echo; echo "== granule plan (execution order, one line per task per node) =="
./granule plan "${tasks[@]}" --nodes "$nodes" -o text
echo; echo "== granule plan --simulate (1 unit per task) =="
./granule plan "${tasks[@]}" --nodes "$nodes" --simulate -o table
echo; echo "== granule strategy simulate (compute-nodes-2 fails to deploy) =="
./granule strategy simulate examples/strategies/deployment-strategy.yaml --nodes examples/strategies/nodes.yaml --fail-deploy cmp201,cmp202 -o table
echo
echo "Next: ./granule plan --help, ./granule strategy --help, and README.md (file formats)."
