#!/bin/bash
# Runs in the plugin's deployment_scripts folder; writes under the agent's root (GRANULE_ROOT).
set -eu
mkdir -p "$GRANULE_ROOT/state"
echo "monitoring agent installed on $(hostname)" >> "$GRANULE_ROOT"/state/example-v5.log
