#!/usr/bin/env bash
# netns_ompi.sh: integration test: Open MPI's mpirun over 4 namespace hosts x 4 ranks runs hibar-mpi-bench.
# Skips (77) without root, without mpirun, or when hibar-mpi-bench was not built (no mpicc).
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
tb=$src/tests/netns/testbed
bench=$bld/tools/peer/hibar-mpi-bench
name=o$$
pfx=hibar-$name

. "$(dirname "$0")/hb_test.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (apt-get install openmpi-bin libopenmpi-dev)"; exit 77; }
[ -x "$bench" ] || { echo "SKIP: $bench not built (configure found no mpicc)"; exit 77; }

# Open MPI leaks at exit by design; a sanitizer build must not fail on that.
export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
# A hang guard only (a run takes seconds): a stuck mpirun fails the test instead of CI.
out=$(timeout -s TERM 300 "$tb" --sites 1 --nodes 4 --name "$name" -- sh -c '
    p0=$("$0/bed-packets") && "$0/ompi-run" -n 16 "$1" --bench barrier,scatter --sizes 1K,64K --iters 100 --warmup 5 &&
        echo "packets $(($("$0/bed-packets") - p0))"' "$src/tests/netns" "$bench")
rc=$?
echo "$out"
left=$(ip netns list 2>/dev/null | awk -v p="$pfx-" 'index($1, p) == 1 { print $1 }')
[ -z "$left" ] || fail "namespaces left: $left"
[ $rc -eq 0 ] || fail "testbed/ompi-run exited $rc"

rows=$(echo "$out" | grep '^{"bench": ')
[ "$(echo "$rows" | grep -c '"impl": "open-mpi", "nodes": 4, "ranks": 16,')" -eq 3 ] ||
    fail "expected 3 rows (barrier, scatter 1K and 64K) from 16 ranks on 4 nodes"
echo "$rows" | grep -q '"bench": "barrier", .*"size": 0, "iters": 100, "median_us": [0-9.]*, "min_us": [0-9.]*, "max_us": [0-9.]*, "p99_us": [0-9.]*, "ci_us": [0-9.]*' ||
    fail "barrier row lacks the doc/design.md section 6 keys"
echo "$rows" | grep -q '"bench": "scatter", .*"size": 65536,' || fail "no 64 KiB scatter row"
# The ranks talked across the bed: 100 barriers of 4 hosts alone send hundreds of packets.
pk=$(echo "$out" | awk '$1 == "packets" { print $2 }')
[ -n "$pk" ] && [ "$pk" -ge 300 ] || fail "bed-packets counted '${pk}' packets for the Open MPI run, expected hundreds"

# The agent really put the ranks on 4 distinct hosts (each its own namespace and hostname).
hosts=$(timeout -s TERM 300 "$tb" --sites 1 --nodes 4 --name "$name" -- \
    "$src/tests/netns/ompi-run" -n 8 sh -c 'echo "$(hostname) $(ip -4 -o addr show dev eth0 | awk "{print \$4}")"' | sort -u)
echo "$hosts"
[ "$(echo "$hosts" | wc -l)" -eq 4 ] || fail "ranks ran on $(echo "$hosts" | wc -l) distinct hosts, expected 4"
echo "$hosts" | grep -q "^$pfx-s0-n3 10.231.0.4/24$" || fail "host n3 has the wrong hostname or address"
echo "PASS"
