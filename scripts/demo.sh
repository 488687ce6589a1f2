#!/usr/bin/env bash
# demo.sh: the main job: an emulated cluster on this host running barriers and scatter, with
# results. Argument: the build dir. Every cluster it starts is stopped again, also on failure.
set -euo pipefail
b=$1
src=$(cd "$(dirname "$0")/.." && pwd)
cfg=$src/examples/local.yaml

echo "== The cluster (examples/local.yaml): 2 sites, 4 chassis of 3 nodes, 12 daemons on this host"
"$b/tools/hibar-info" --config "$cfg" | sed -n '/^nodes:/p;/^topology:/,$p'
echo
echo "== Whole-cluster barrier through 12 hibard daemons (ZeroMQ chassis tree + shm chassis barrier)"
echo "   both protocols, with the paper's formulas from T_IB and T_SR measured in the same run"
"$b/tools/hibar-bench" cluster-barrier --config "$cfg" --protocol scmd,tree --iters 300 \
    --warmup 30 --probe-iters 100
echo
echo "== A job of 12 ranks launched by hibar-run on the emulated cluster (PMIx_Init, PMIx_Fence)"
make -s -C "$b/tests" pmix_hello >/dev/null
out=$(mktemp /tmp/hibar-demo.XXXXXX)
trap 'rm -f "$out"' EXIT
"$b/tools/hibar-run" -n 12 --emulate "$cfg" --tag-output "$b/tests/pmix_hello" >"$out" 2>&1
sort -s -k1,1V "$out" | head -14
echo
echo "== libhibar on one node, 4 ranks (the segment only): barrier and scatter (median of 2000 isolated repetitions)"
"$b/tools/hibar-bench" barrier --ranks 4 --iters 2000 --warmup 200
"$b/tools/hibar-bench" scatter --ranks 4 --iters 500 --warmup 50 --sizes 8,1K,64K,1M
echo
echo "== examples/hibar_example.c: 24 libhibar ranks on the 12 emulated nodes (2 per node):"
echo "   barrier, split-phase barrier, subset barrier, scatter and gather, data checked; the"
echo "   nodes' last arrivers hand each epoch to their daemon, which runs it across the cluster"
"$b/tools/hibar-run" -n 24 --per-node 2 --emulate "$cfg" "$b/examples/hibar-example"
