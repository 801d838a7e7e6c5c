#!/bin/bash
set -eu
mkdir -p state
echo "post 6000 on $(hostname)" >> state/example-v4.log
