#!/usr/bin/env bash
# client_bench.sh: hibar-bench barrier|scatter run end to end (rows printed, data checked by the ranks); no timing checked.
set -u
. "$(dirname "$0")/hb_test.sh"
bench="${top_builddir:-..}/tools/hibar-bench"
[ -x "$bench" ] || { echo "client_bench: $bench not built"; exit 99; }
failed=0
check() { # check NAME OUTPUT ROWS: OUTPUT has ROWS json rows of impl hibar
    n=$(printf '%s\n' "$2" | grep -c '"impl": "hibar"')
    if [ "$n" -ne "$3" ]; then
        echo "FAIL $1: $n hibar rows, want $3"
        printf '%s\n' "$2"
        failed=1
    else
        echo "ok   $1"
    fi
}
out=$("$bench" barrier --ranks 3 --iters 200 --warmup 10 --json) || { echo "FAIL barrier: exit $?"; failed=1; }
check "barrier 3 ranks" "$out" 1
out=$("$bench" barrier --ranks 8 --iters 50 --warmup 5 --bind none --json) || { echo "FAIL barrier 8: exit $?"; failed=1; }
check "barrier 8 ranks" "$out" 1
# 8 B through the segment, 70 KiB by cross-memory attach, and the same chunked through the segment
out=$("$bench" scatter --ranks 2 --iters 20 --warmup 2 --sizes 8,70K --json) || { echo "FAIL scatter: exit $?"; failed=1; }
check "scatter 2 ranks" "$out" 2
out=$(HIBAR_CMA=0 "$bench" scatter --ranks 3 --iters 20 --warmup 2 --sizes 200K --json) || { echo "FAIL scatter chunked: exit $?"; failed=1; }
check "scatter 3 ranks, chunked" "$out" 1
# --floor: the plain shared-memory barrier beside hibar's (ranks <= cores), refused above
out=$("$bench" barrier --ranks 2 --iters 200 --warmup 10 --floor --json) || { echo "FAIL floor: exit $?"; failed=1; }
check "barrier --floor" "$out" 1
if printf '%s\n' "$out" | grep -q '"impl": "shm-floor".*"hibar_over_floor": [0-9]'; then
    echo "ok   shm-floor row"
else
    echo "FAIL shm-floor row"; printf '%s\n' "$out"; failed=1
fi
"$bench" barrier --ranks $(($(nproc) + 1)) --floor >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] && echo "ok   --floor with ranks > cores refused" || { echo "FAIL --floor > cores: exit $rc"; failed=1; }
# --compare whose Open MPI run fails (an mpirun that exits 1): hibar's rows of every size still
# come, no open-mpi row, and the exit status says the comparison is not whole
fake=$(mktemp -d /tmp/hibar-fakempi.XXXXXX) || exit 99
on_exit 'rm -rf "$fake"'
printf '#!/bin/sh\necho "fake mpirun: no" >&2\nexit 1\n' >"$fake/mpirun" && chmod +x "$fake/mpirun"
out=$(PATH="$fake:$PATH" "$bench" scatter --ranks 2 --iters 10 --warmup 2 --sizes 8,4K --compare \
    --json 2>/dev/null); rc=$?
check "scatter --compare, Open MPI failing" "$out" 2
if [ "$rc" -ne 0 ] && ! printf '%s\n' "$out" | grep -q '"impl": "open-mpi"'; then
    echo "ok   a failed peer: exit $rc, no peer row"
else
    echo "FAIL a failed peer: exit $rc"; printf '%s\n' "$out"; failed=1
fi
# bad usage: exit status 2
"$bench" barrier --ranks 0 >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] && echo "ok   --ranks 0 refused" || { echo "FAIL --ranks 0: exit $rc"; failed=1; }
"$bench" scatter --sizes 1X >/dev/null 2>&1; rc=$?
[ "$rc" -eq 2 ] && echo "ok   --sizes 1X refused" || { echo "FAIL --sizes 1X: exit $rc"; failed=1; }
exit $failed
