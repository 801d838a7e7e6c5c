#!/bin/bash
# Runs in the agent's root directory (GRANULE_ROOT).
set -eu
mkdir -p state
echo "monitoring agent installed on $(hostname)" >> state/example-v5.log
