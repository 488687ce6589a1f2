#!/usr/bin/env bash
# figures.sh: measure every performance target of the issues in one run, on this machine,
# with hibar-bench and hibar-sim, hibar beside Open MPI where there is a peer. Run it on a
# quiet machine. Usage: scripts/figures.sh BUILD_DIR OUT_DIR
# Writes OUT_DIR/*.json (doc/design.md section 6 rows) and OUT_DIR/*.txt (the tables), and
# prints a summary. Benchmarks only: nothing here is a test.
set -euo pipefail
b=$(cd "$1" && pwd)
out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
bench=$b/tools/hibar-bench

run() { # name, command...: table to NAME.txt, JSON rows to NAME.json
    local name=$1
    shift
    echo "== $name: $*"
    "$@" >"$out/$name.txt" 2>&1 || echo "   (exit $?: see $out/$name.txt)"
    "$@" --json >"$out/$name.json" 2>/dev/null || true
    grep -v '^#' "$out/$name.txt" | sed 's/^/   /' | head -12
}

# issue 3: chassis barrier (shm), 2 and 3 participants; CPU of idle waits
run hwb-2 "$bench" hwbarrier --backend shm -n 2 --iters 20000
run hwb-3 "$bench" hwbarrier --backend shm -n 3 --iters 20000
run hwb-idle "$bench" hwbarrier --backend shm -n 3 --iters 1000 --idle-wait 5
# issue 4: the chassis tree on the paper's cluster, both protocols, formulas, idle CPU
run cluster-scmd30 "$bench" cluster-barrier --config "$src/examples/scmd-30.yaml" \
    --protocol scmd,tree --iters 1000 --idle-cpu 10
# issue 5: libhibar on one node against Open MPI
run barrier-2 "$bench" barrier --ranks 2 --compare
run barrier-8 "$bench" barrier --ranks 8 --iters 3000 --compare
run scatter-4 "$bench" scatter --ranks 4 --iters 300 --sizes 8,1K,64K,1M --compare
# issue 10: the simulator's own speed and its predictions
echo "== hibar-sim barrier --nodes 100000 (time)"
/usr/bin/time -f "   %e s, %M KiB" "$b/tools/hibar-sim" barrier --nodes 100000 --fanout 16 \
    >"$out/sim-100k.txt" 2>&1 || true
tail -1 "$out/sim-100k.txt"
run sim-predict "$b/tools/hibar-sim" predict --plot "$out/plots"
