#!/bin/bash
# fence_compare.sh: hibar-bench fence --compare on 2 namespace hosts x 2 ranks: hibar and Open MPI's
# mpirun run the same fence client on the same hosts; rows for both phases and implementations,
# with the ratio. Figures are not checked (a benchmark); skips (77) without root or mpirun.
set -u
bld=${top_builddir:-$(cd "$(dirname "$0")/.." && pwd)}
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
[ -x "$bld/tests/fence_client" ] || { echo "SKIP: fence_client not built"; exit 77; }
export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
out=$(timeout -s TERM 240 "$bld/tools/hibar-bench" fence --compare --bed-name fcmp$$ --nodes 2 --ppn 2 \
    --sizes 1024 --iters 3 --jobs 1 --json 2>&1)
rc=$?
echo "$out"
[ $rc -ne 77 ] || { echo "SKIP: test bed unavailable"; exit 77; }
[ $rc -eq 0 ] || fail "hibar-bench fence --compare exited $rc"
for impl in hibar open-mpi; do
    for phase in first steady; do
        echo "$out" | grep -q "^{\"bench\": \"fence\", \"impl\": \"$impl\", \"nodes\": 2, \"ranks\": 4, \"size\": 1024, .*\"phase\": \"$phase\", \"ratio\": [0-9]" ||
            fail "no $impl $phase row"
    done
done
[ -z "$(ip netns list 2>/dev/null | grep "hibar-fcmp$$-")" ] || fail "namespaces left"
echo "PASS: fence_compare"
