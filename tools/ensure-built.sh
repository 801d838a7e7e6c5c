#!/usr/bin/env bash
# Builds dist/ when it is missing or a source file is newer than the last build.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
stamp="$here/dist/.stamp"
if [ ! -f "$stamp" ] || [ -n "$(find "$here/apps" "$here/libs" \( -name '*.ts' -o -name '*.c' \) -newer "$stamp" -print -quit 2>/dev/null)" ]; then
  (cd "$here" && node tools/build.mjs) >&2
fi
