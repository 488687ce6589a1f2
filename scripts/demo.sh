#!/usr/bin/env bash
# demo.sh: the main job: show the emulated cluster (grows as hibar grows). Argument: build dir.
set -euo pipefail
b=$1
src=$(cd "$(dirname "$0")/.." && pwd)
"$b/tools/hibar-info" --config "$src/examples/local.yaml" --t-ib 2 --t-sr 150
