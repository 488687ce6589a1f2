#!/bin/bash
# boot_ompi.sh: integration test: Open MPI's mpirun starts hibard (bootstrap pmix) on 4 namespace hosts, hibar-run runs pmix_hello across them; mpirun's end stops every daemon; bootstrap faults.
# Skips (77) without root, mpirun or the test bed. Everything it starts carries the name bo$$.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
tb=$src/tests/netns/testbed
name=${HB_BOOT_NAME:-bo$$} # the bed and the cluster share it
export HB_BOOT_NAME=$name
. "$src/tests/hb_test.sh"
hb_use_bed "$name" # run_dir, bed_done, stop_daemons, wait_up N, wait_gone

if [ "${1-}" != --inside ]; then
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
    command -v mpirun >/dev/null || { echo "SKIP: no mpirun (apt-get install openmpi-bin)"; exit 77; }
    for f in "$bld/daemon/hibard" "$bld/tools/hibar-boot" "$bld/tools/hibar-run" "$bld/tests/pmix_hello"; do
        [ -x "$f" ] || { echo "SKIP: $f not built"; exit 77; }
    done
    export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
    # a hang guard only: the whole test takes well under a minute
    timeout -s TERM 240 "$tb" --sites 1 --nodes 4 --name "$name" -- bash "$0" --inside
    rc=$?
    bed_done $rc
fi

# ---- inside the bed -------------------------------------------------------------------------
tmp=$(mktemp -d /tmp/hibar-boot-ompi.XXXXXX)
mpi_pid=''
cleanup() {
    [ -n "$mpi_pid" ] && kill -TERM "$mpi_pid" 2>/dev/null
    stop_daemons
    rm -rf "$tmp" "$run_dir"
}
on_exit cleanup
read -r -a hosts <<<"$(for hp in $HIBAR_TESTBED_HOSTS; do printf '%s ' "${hp%%:*}"; done)"
hibard=$bld/daemon/hibard

# 1. mpirun (through the bed's rsh agent) starts one hibard per host
t0=$(date +%s.%N)
"$HIBAR_TESTBED_MPIRUN" --per-host 1 -n 4 --map-by ppr:1:node \
    "$hibard" -f -l info -o "cluster=$name" -o bootstrap=pmix >"$tmp/daemons.log" 2>&1 &
sleep 0.5
mpi_pid=$(pgrep -f -- "^mpirun .*cluster=$name" | head -1)
wait_up 4 || { cat "$tmp/daemons.log"; fail "4 daemons did not come up under mpirun"; }
t1=$(date +%s.%N)
echo "4 daemons up under mpirun in $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s"
cat "$run_dir/cluster.yaml"
for h in "${hosts[@]}"; do
    grep -q "name: \"$h\", address: \"10\.231\.0\.[1-4]\"" "$run_dir/cluster.yaml" ||
        fail "host $h missing from cluster.yaml (or not on its own address)"
done
[ "$(grep -c '^  - "' "$run_dir/cluster.yaml")" -eq 4 ] || fail "expected 4 chassis (one per host)"
sleep 1 # heartbeats linked

# 2. hibar-run inside the allocation: 8 ranks on the 4 daemons, with fences across hosts
"$bld/tools/hibar-run" --config "$run_dir/cluster.yaml" -n 8 -T 60 -t "$bld/tests/pmix_hello" >"$tmp/run.out" 2>&1
rc=$?
cat "$tmp/run.out"
[ $rc -eq 0 ] || { cat "$tmp/daemons.log"; fail "hibar-run exited $rc"; }
[ "$(grep -c 'hello rank [0-7] of 8 ' "$tmp/run.out")" -eq 8 ] || fail "expected 8 hellos"
[ "$(grep -c 'bye rank [0-7] after 2 fences' "$tmp/run.out")" -eq 8 ] || fail "expected 8 byes"
[ "$(grep -o 'host hibar-[^ ]*' "$tmp/run.out" | sort -u | wc -l)" -eq 4 ] || fail "ranks not on 4 hosts"

# 2b. a collective between the daemons, every daemon checking its data: the segments go on the
# plain data plane (data ports and tokens learned on the links bootstrap pmix set up)
pids=()
for i in 0 1 2 3; do
    "$bld/tools/hibar-cluster" --config "$run_dir/cluster.yaml" ctl "${hosts[$i]}" \
        coll scatter flat 1 1000000 >"$tmp/coll.$i" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
for i in 0 1 2 3; do
    grep -q ' check=ok' "$tmp/coll.$i" || { cat "$tmp/coll.$i"; fail "scatter on ${hosts[$i]}"; }
done
rx=$("$bld/tools/hibar-cluster" --config "$run_dir/cluster.yaml" ctl "${hosts[0]}" stats |
    tr ' ' '\n' | sed -n 's/^data_rx=//p')
[ "${rx:-0}" -gt 0 ] || fail "scatter: ${hosts[0]} took no frame on the data plane (data_rx=${rx:-})"
echo "scatter across 4 hosts on the plain data plane: ok (${hosts[0]} data_rx=$rx)"

# 3. no orphans: mpirun goes, every hibard goes
[ -n "$mpi_pid" ] || fail "cannot find mpirun's pid"
kill -TERM "$mpi_pid"
for _ in $(seq 1 50); do
    [ -z "$(pgrep -f -- "$hibard .*cluster=$name" || true)" ] && break
    sleep 0.2
done
[ -z "$(pgrep -f -- "$hibard .*cluster=$name" || true)" ] || fail "hibards outlived mpirun"
mpi_pid=''
echo "mpirun stopped: every daemon exited"
wait

# 4. faults
# 4a. bootstrap pmix without a PMIx launcher
out=$(env -u PMIX_NAMESPACE "$hibard" -f -o "cluster=$name" -o bootstrap=pmix 2>&1)
rc=$?
echo "$out"
[ $rc -eq 2 ] && echo "$out" | grep -q 'no PMIx server to ask (PMIX_NAMESPACE is not set)' ||
    fail "pmix without a server: rc $rc"
# 4b. bootstrap pmix with a dead PMIx server
out=$(PMIX_NAMESPACE=x PMIX_RANK=0 PMIX_SERVER_URI41="x.0;tcp4://127.0.0.1:1" PMIX_SERVER_URI4="x.0;tcp4://127.0.0.1:1" \
    PMIX_SERVER_URI3="x.0;tcp4://127.0.0.1:1" PMIX_SERVER_URI21="x.0;tcp4://127.0.0.1:1" PMIX_SERVER_URI2="x.0;tcp4://127.0.0.1:1" \
    PMIX_SECURITY_MODE=native PMIX_PTL_MODULE=tcp HIBAR_BOOT_TIMEOUT=5 timeout 40 "$hibard" -f -o "cluster=$name" -o bootstrap=pmix 2>&1)
rc=$?
echo "$out"
[ $rc -eq 2 ] && echo "$out" | grep -q 'bootstrap pmix: .*PMIx' || fail "pmix with a dead server: rc $rc"

# 4c. a daemon missing from the PMIx fence: the 4th rank of the job never starts hibard; the
# others all stop with the same message after HIBAR_BOOT_TIMEOUT
t0=$(date +%s)
out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HIBAR_BOOT_TIMEOUT=3 timeout 60 \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -x HIBAR_BOOT_TIMEOUT \
    -n 3 "$hibard" -f -o "cluster=$name" -o bootstrap=pmix : -n 1 sleep 30 2>&1)
t1=$(date +%s)
msgs=$(echo "$out" | grep '^hibard: ' | sort -u)
echo "$msgs"
[ "$(echo "$msgs" | wc -l)" -eq 1 ] && echo "$msgs" | grep -q 'bootstrap pmix: PMIx_Fence of the 4 daemons (timeout 3 s)' ||
    fail "missing daemon under PMIx: expected one fence message"
[ $((t1 - t0)) -lt 30 ] || fail "missing daemon under PMIx: took $((t1 - t0)) s"
[ -z "$(pgrep -f -- "$hibard .*cluster=$name" || true)" ] || fail "hibards left after the failed fence"
rm -rf "$run_dir"

# 4d. bootstrap env from a hostfile: 3 hosts, then a node missing and an unreachable rendezvous
printf '%s %s\n' "${hosts[0]}" 10.231.0.1 "${hosts[1]}" 10.231.0.2 "${hosts[2]}" 10.231.0.3 >"$tmp/hosts"
start_env() { # index
    HIBAR_HOSTFILE=$tmp/hosts HIBAR_NODE_INDEX=$1 HIBAR_BOOT_TIMEOUT=${TO:-20} \
        "$HIBAR_TESTBED_HOSTEXEC" "${hosts[$1]}" "$hibard" -l info -o "cluster=$name" -o bootstrap=env -o port=7300 \
        >"$tmp/env$1.log" 2>&1 &
    eval "envpid$1=\$!"
}
start_env 0; start_env 1; start_env 2
wait_up 3 || { cat "$tmp"/env*.log; fail "env bootstrap: 3 daemons did not come up"; }
grep -q 'port: 7301' "$run_dir/cluster.yaml" || fail "env: daemons not on port + 1"
sleep 1
"$bld/tools/hibar-run" --config "$run_dir/cluster.yaml" -n 3 -T 60 "$bld/tests/pmix_hello" >"$tmp/run3.out" 2>&1 ||
    { cat "$tmp/run3.out"; fail "hibar-run on the env cluster"; }
[ "$(grep -c 'bye rank [0-2] after 2 fences' "$tmp/run3.out")" -eq 3 ] || fail "env: expected 3 byes"
echo "bootstrap env: 3 daemons, pmix_hello x3 ok"
# shellcheck disable=SC2154
kill -TERM "$envpid0" "$envpid1" "$envpid2"
wait
rm -rf "$run_dir"

TO=3
t0=$(date +%s)
start_env 0; start_env 1 # node 2 never comes
wait
t1=$(date +%s)
cat "$tmp/env0.log" "$tmp/env1.log"
m0=$(grep -o 'bootstrap env: .*' "$tmp/env0.log")
m1=$(grep -o 'bootstrap env: .*' "$tmp/env1.log")
[ -n "$m0" ] && [ "$m0" = "$m1" ] || fail "missing node: the daemons' messages differ"
echo "$m0" | grep -q "did not reach the rendezvous at ${hosts[0]} port 7300 within 3 s: ${hosts[2]}$" ||
    fail "missing node: message does not name it"
[ $((t1 - t0)) -lt 30 ] || fail "missing node: took $((t1 - t0)) s"

t0=$(date +%s)
start_env 1 # node 0 never comes
wait
t1=$(date +%s)
cat "$tmp/env1.log"
grep -q "cannot reach the rendezvous of node ${hosts[0]} at 10.231.0.1:7300 within 3 s" "$tmp/env1.log" ||
    fail "unreachable rendezvous: message does not say what was tried"
[ $((t1 - t0)) -lt 30 ] || fail "unreachable rendezvous: took $((t1 - t0)) s"

# a rendezvous that answers a line naming no node of the hostfile: the daemon stops, quoting it
"$HIBAR_TESTBED_HOSTEXEC" "${hosts[0]}" python3 -c '
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.231.0.1", 7300))
s.listen(1)
s.settimeout(20)
c, _ = s.accept()
c.recv(4096)
c.sendall(b"NODE 9 nosuchhost 0 10.231.0.9 7301\nEND\n")
c.close()' &
fake=$!
start_env 1
wait "$envpid1" && fail "bad rendezvous line: hibard did not stop"
wait "$fake" || true
cat "$tmp/env1.log"
grep -q "bootstrap env: bad line from the rendezvous at 10.231.0.1:7300: 'NODE 9 nosuchhost" \
    "$tmp/env1.log" || fail "bad rendezvous line: not quoted"
echo "PASS"
