#!/usr/bin/env bash
# netns_mpi_bench.sh: hibar-bench mpi on the network-namespace bed (root): the same MPI program
# under mpirun, hibar-run with the component and ^hibar on 3 hosts x 1 rank, one short run of
# each way (the barrier, gather at 8 bytes): every way gives its row, the table's side of the
# barrier with one rank per host is Open MPI's (below), Open MPI alone sent packets across the
# bed (its ranks were on the bed's hosts), and nothing of the bed or its daemons is left. No
# figure is checked: the machine may be loaded. Needs root (77 without), mpirun and the
# component (77 without).
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
. "$(dirname "$0")/hb_test.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no ip"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
[ -e "$bld/mpi/.libs/mca_coll_hibar.so" ] && [ -x "$bld/tools/peer/hibar-mpi-bench" ] ||
    { echo "SKIP: mca_coll_hibar or hibar-mpi-bench not built"; exit 77; }
TMP=$(mktemp -d /tmp/hibar-mpibench-test.XXXXXX) || exit 99
on_exit 'rm -rf "$TMP"'
hb_mpi_component "$TMP/comp"
on_fail 'echo "--- stdout" >&2; cat "$TMP/out" >&2; echo "--- stderr" >&2; tail -n 30 "$TMP/err" >&2'
export HOME=$TMP # no user's mca-params.conf
timeout -k 10 900 "$bld/tools/hibar-bench" mpi --bed 3 --per-node 1 --bed-name "hbmb$$" \
    --bed-net 10.241 --bench barrier,gather --sizes 8 --reps 1 -- --max-secs 0.5 --min-iters 5 \
    >"$TMP/out" 2>"$TMP/err" || fail "hibar-bench mpi --bed: exit $?"
grep -q "^# 3 ranks, 1 per host on 3 namespace hosts" "$TMP/out" || fail "no note of the bed"
row='[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.e+-]+ +[0-9.e+-]+ +(mpirun|hibar-run|\^hibar)'
grep -Eq "^0 +$row +below$" "$TMP/out" || fail "no barrier row passed down (one rank per host)"
grep -Eq "^8 +$row +(below|hibar)$" "$TMP/out" || fail "no gather row of 8 bytes"
pk=$(sed -n 's/^# Open MPI alone sent \([0-9]*\) packets across the bed in 1 runs*$/\1/p' "$TMP/out")
[ -n "$pk" ] && [ "$pk" -ge 100 ] || fail "Open MPI alone did not cross the bed (packets: '$pk')"
! ip netns list | grep -q "hbmb$$" || fail "the bed's namespaces were left"
[ -z "$(pgrep -f -- "cluster=hibar-hbmb$$" || true)" ] || fail "the bed's daemons were left"
echo "PASS: netns_mpi_bench (Open MPI alone sent $pk packets across the bed)"
