#!/bin/bash
set -eu
mkdir -p "$GRANULE_ROOT/state"
echo "post 6000 on $(hostname)" >> "$GRANULE_ROOT"/state/example-v4.log
