#!/usr/bin/env bash
# daemon_layers.sh: hibard's layering holds: no include or call cycle between daemon files or
# folders, nothing of the core modules includes daemon/ or libclient/ (scripts/layers.py).
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
exec python3 "$src/scripts/layers.py" "$src"
