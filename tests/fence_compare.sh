#!/bin/bash
# fence_compare.sh: hibar-bench fence --compare on 2 namespace hosts x 2 ranks: hibar and Open MPI's
# mpirun run the same fence client on the same hosts; rows for both phases and implementations,
# with the ratio, and the packets each sent across the bed; with Slurm installed also --peer slurm
# (srun --mpi=pmix on a private Slurm). Figures are not checked (a benchmark); skips (77)
# without root or mpirun.
set -u
bld=${top_builddir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$(dirname "$0")/hb_test.sh"
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
# the packets each sent across the bed: Open MPI's ranks left the first host
echo "$out" | grep -q '"impl": "open-mpi", .*"bed_packets": [1-9]' || fail "no packets from Open MPI across the bed"

# --peer slurm: Slurm's own PMIx server (a private Slurm on the bed's hosts), when installed
if command -v slurmd >/dev/null && command -v munged >/dev/null && ls /usr/lib/*/slurm-wlm/mpi_pmix*.so >/dev/null 2>&1; then
    out=$(timeout -s TERM 240 "$bld/tools/hibar-bench" fence --compare --peer slurm --bed-name fcsl$$ \
        --nodes 2 --ppn 2 --sizes 0 --iters 3 --jobs 1 --json 2>&1)
    rc=$?
    echo "$out"
    [ $rc -eq 0 ] || fail "hibar-bench fence --compare --peer slurm exited $rc"
    for impl in hibar slurm; do
        echo "$out" | grep -q "^{\"bench\": \"fence\", \"impl\": \"$impl\", \"nodes\": 2, \"ranks\": 4, \"size\": 0, .*\"phase\": \"steady\", \"ratio\": [0-9]" ||
            fail "no $impl steady row (--peer slurm)"
    done
    [ -z "$(ip netns list 2>/dev/null | grep "hibar-fcsl$$-")" ] || fail "namespaces left (--peer slurm)"
    pgrep -f "hibar-fcsl$$" >/dev/null && fail "Slurm daemons left"
else
    echo "no Slurm with its mpi/pmix plugin: --peer slurm not tried"
fi
echo "PASS: fence_compare"
