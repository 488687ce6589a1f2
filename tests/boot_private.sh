#!/bin/bash
# boot_private.sh: integration test of launch forwarding: 4 namespace hosts, each with its own private /tmp (no daemon's socket or run dir is visible from another host); hibar-run on host 0 runs jobs across all hosts through its own daemon; kill and a lost node stop the job everywhere.
# Skips (77) without root, unshare/nsenter or the test bed. Everything it starts carries the name pv$$.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
tb=$src/tests/netns/testbed
name=${HB_PRIV_NAME:-pv$$} # the bed and the cluster share it
net=${HB_PRIV_NET:-10.238}
export HB_PRIV_NAME=$name HB_PRIV_NET=$net
. "$src/tests/hb_test.sh"
hb_use_bed "$name" # run_dir (inside each host's private /tmp), bed_done

if [ "${1-}" != --inside ]; then
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
    for c in unshare nsenter pgrep; do
        command -v $c >/dev/null || { echo "SKIP: no $c"; exit 77; }
    done
    for f in "$bld/daemon/hibard" "$bld/tools/hibar-run" "$bld/tests/pmix_hello" "$bld/tests/fence_client"; do
        [ -x "$f" ] || { echo "SKIP: $f not built"; exit 77; }
    done
    export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
    # a hang guard only: the whole test takes well under a minute
    timeout -s TERM 200 "$tb" --sites 1 --nodes 4 --name "$name" --net "$net" -- bash "$0" --inside
    bed_done $? # a run dir here would be one in the machine's /tmp
fi

# ---- inside the bed -------------------------------------------------------------------------
# test files live outside /tmp: every host mounts its own /tmp
tmp=$(mktemp -d /var/tmp/hibar-priv.XXXXXX)
declare -a dpid=()
cleanup() {
    local p
    for p in "${dpid[@]}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; done
    sleep 0.5
    for p in "${dpid[@]}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null; done
    pkill -KILL -f -- "$tmp/" 2>/dev/null
    rm -rf "$tmp"
    # chassis-barrier segments of killed daemons (the lost-node case SIGKILLs one)
    rm -f /dev/shm/hibar-"$(id -u)"-"$name"-*
}
on_exit cleanup
read -r -a hosts <<<"$(for hp in $HIBAR_TESTBED_HOSTS; do printf '%s ' "${hp%%:*}"; done)"
read -r -a addrs <<<"$(for hp in $HIBAR_TESTBED_HOSTS; do printf '%s ' "${hp#*:}"; done)"
# the programs too: a build tree under /tmp is hidden from the hosts by their private /tmp
cp "$bld/daemon/hibard" "$bld/tools/hibar-run" "$bld/tests/pmix_hello" "$bld/tests/fence_client" "$tmp/"
hibard=$tmp/hibard
HELLO=$tmp/pmix_hello
FC=$tmp/fence_client
for i in 0 1 2 3; do printf '%s %s\n' "${hosts[$i]}" "${addrs[$i]}"; done >"$tmp/hosts"

# host i: its network namespace, its hostname, and a private tmpfs over /tmp; hibard with
# bootstrap env (hostfile + rendezvous on host 0): no file is shared between the daemons
start() { # index
    HIBAR_HOSTFILE=$tmp/hosts HIBAR_NODE_INDEX=$1 "$HIBAR_TESTBED_HOSTEXEC" "${hosts[$1]}" \
        unshare --mount --propagation private sh -c 'mount -t tmpfs -o mode=1777 hibar-priv /tmp && exec "$@"' sh \
        "$hibard" -f -l info -o "cluster=$name" -o bootstrap=env -o port=7300 \
        >"$tmp/d$1.log" 2>&1 &
    dpid[$1]=$!
}
on() { # index COMMAND...: in host i's namespaces (network, hostname, mounts) like its daemon
    local i=$1
    shift
    nsenter -t "${dpid[$i]}" -n -u -m "$@"
}
on_bg() { # the same, run with &: $! is then the command's pid
    local i=$1
    shift
    exec nsenter -t "${dpid[$i]}" -n -u -m "$@"
}
for i in 0 1 2 3; do start $i; done
up=0
for _ in $(seq 1 100); do
    n=0
    for i in 0 1 2 3; do
        on $i test -S "$run_dir/${hosts[$i]}.sock" 2>/dev/null && n=$((n + 1))
    done
    [ $n -eq 4 ] && { up=1; break; }
    sleep 0.2
done
[ $up -eq 1 ] || { tail -n 5 "$tmp"/d*.log; fail "4 daemons did not come up"; }
sleep 1 # linked
# every host sees only its own daemon; the machine's /tmp has none of it
for i in 0 1 2 3; do
    s=$(on $i sh -c "ls $run_dir/*.sock" | tr '\n' ' ')
    [ "$s" = "$run_dir/${hosts[$i]}.sock " ] || fail "host $i sees sockets: $s"
done
[ ! -e "$run_dir" ] || fail "the run dir is in the machine's /tmp: the hosts' /tmp are not private"
echo "4 daemons up, each with a private /tmp"

RUN=("$tmp/hibar-run" --config "$run_dir/cluster.yaml")
# 1. pmix_hello: 8 ranks on 4 hosts, 2 fences across them, output tagged
on 0 timeout 60 "${RUN[@]}" -n 8 -T 50 -t "$HELLO" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out" "$tmp/err"
[ $rc -eq 0 ] || { tail -n 20 "$tmp"/d*.log; fail "pmix_hello across 4 private hosts: exit $rc"; }
[ "$(grep -c '^\[[0-7]\] hello rank [0-7] of 8 ' "$tmp/out")" -eq 8 ] || fail "expected 8 tagged hellos"
[ "$(grep -c 'bye rank [0-7] after 2 fences' "$tmp/out")" -eq 8 ] || fail "expected 8 byes"
[ "$(grep -o "host ${hosts[0]%n0}n[0-3]" "$tmp/out" | sort -u | wc -l)" -eq 4 ] || fail "ranks not on 4 hosts"

# 2. fences with data across the hosts (1 KiB per rank, every rank checks every key), then
# 64 KiB per rank (larger than a frame)
on 0 timeout 60 "${RUN[@]}" -n 8 -T 50 "$FC" --size 1024 --iters 3 >"$tmp/out" 2>"$tmp/err" ||
    { cat "$tmp/out" "$tmp/err"; fail "fence_client across 4 private hosts"; }
[ "$(grep -c '^ok rank' "$tmp/out")" -eq 8 ] || fail "fence_client: expected 8 ok"
on 0 timeout 60 "${RUN[@]}" -n 4 -T 50 "$FC" --size 65536 >"$tmp/out" 2>"$tmp/err" ||
    { cat "$tmp/out" "$tmp/err"; fail "fence_client 64 KiB"; }
[ "$(grep -c '^ok rank' "$tmp/out")" -eq 4 ] || fail "fence_client 64 KiB: expected 4 ok"
# a 100 KB environment: the spec crosses the links in 4 chunks; every rank sees it whole
BIG=$(head -c 100000 /dev/zero | tr '\0' x) on 0 timeout 60 "${RUN[@]}" -n 8 -T 50 /bin/sh -c 'echo "len ${#BIG} $(hostname)"' \
    >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/out" "$tmp/err"; fail "job with a 100 KB spec"; }
[ "$(grep -c '^len 100000 ' "$tmp/out")" -eq 8 ] && [ "$(sort -u "$tmp/out" | wc -l)" -eq 4 ] ||
    { cat "$tmp/out"; fail "100 KB spec: expected 8 ranks on 4 hosts seeing it whole"; }
echo "pmix_hello, fence_client and a 100 KB spec across 4 hosts: ok"

# 3. a failing rank on host 2 stops the job everywhere, reported with its node; exit status 3
on 0 timeout 60 "${RUN[@]}" -n 8 -T 50 "$HELLO" --fences 3 --fail-rank 5 >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc -eq 3 ] || fail "failing rank: exit $rc, expected 3"
grep -q "rank 5 (node ${hosts[2]}) exited with status 3" "$tmp/err" || fail "failing rank not reported"
[ -z "$(pgrep -f -- "$HELLO")" ] || fail "ranks left after the failed job"

# 4. kill: SIGTERM to hibar-run while the ranks wait in a fence; every host stops its ranks
on_bg 0 "${RUN[@]}" -n 8 "$HELLO" --fences 2 --hang-rank 5 >"$tmp/out" 2>"$tmp/err" &
rp=$!
for _ in $(seq 1 100); do [ "$(grep -c 'hello rank' "$tmp/out")" -eq 8 ] && break; sleep 0.1; done
[ "$(grep -c 'hello rank' "$tmp/out")" -eq 8 ] || fail "kill: the job did not start"
t0=$(date +%s.%N)
kill -TERM $rp
wait $rp
rc=$?
t1=$(date +%s.%N)
cat "$tmp/err"
[ $rc -eq 143 ] || fail "kill: exit $rc, expected 143"
grep -q 'Terminated: stopping the job' "$tmp/err" || fail "kill: no message"
[ -z "$(pgrep -f -- "$HELLO")" ] || fail "kill: ranks left"
echo "kill: the job stopped on every host in $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s"
# the daemons brought their barrier engines back in step: the next job runs
on 0 timeout 60 "${RUN[@]}" -n 4 -T 50 "$HELLO" >"$tmp/out" 2>"$tmp/err" ||
    { cat "$tmp/out" "$tmp/err"; fail "job after the killed one"; }
[ "$(grep -c 'bye rank' "$tmp/out")" -eq 4 ] || fail "job after the killed one: expected 4 byes"

# 5. a lost node: host 2's daemon dies (SIGKILL) mid-job; hibar-run names it and ends non-zero
# within seconds, every other host stops its ranks
on_bg 0 "${RUN[@]}" -n 8 "$HELLO" --fences 2 --hang-rank 0 >"$tmp/out" 2>"$tmp/err" &
rp=$!
for _ in $(seq 1 100); do [ "$(grep -c 'hello rank' "$tmp/out")" -eq 8 ] && break; sleep 0.1; done
[ "$(grep -c 'hello rank' "$tmp/out")" -eq 8 ] || fail "lost node: the job did not start"
t0=$(date +%s.%N)
kill -KILL "${dpid[2]}"
dpid[2]=''
for _ in $(seq 1 300); do kill -0 $rp 2>/dev/null || break; sleep 0.1; done
kill -0 $rp 2>/dev/null && fail "lost node: hibar-run still running 30 s later"
wait $rp
rc=$?
t1=$(date +%s.%N)
cat "$tmp/err"
[ $rc -ne 0 ] || fail "lost node: hibar-run exited 0"
grep -q "hibar-run: lost node ${hosts[2]}: the daemon of node ${hosts[2]} died" "$tmp/err" ||
    fail "lost node: not named"
# 4 chassis of one host: a chain n0-n1-n2-n3; n3's path to n0 crosses the lost n2, so its end
# comes around it (a direct link): it is not reported lost
grep -q "hibar-run: lost node ${hosts[3]}" "$tmp/err" && fail "lost node: ${hosts[3]}, behind it, taken for lost"
awk "BEGIN { exit !($t1 - $t0 < 4) }" || fail "lost node: hibar-run took more than 4 s"
for _ in $(seq 1 30); do [ -z "$(pgrep -f -- "$HELLO")" ] && break; sleep 0.1; done
[ -z "$(pgrep -f -- "$HELLO")" ] || { pgrep -af -- "$HELLO"; fail "lost node: ranks left"; }
echo "lost node: hibar-run ended (exit $rc) $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s after the daemon died"
# a job on the lost node is refused at once, naming it (exit 1); one on the live nodes runs
on 0 timeout 30 "${RUN[@]}" -H "${hosts[2]},${hosts[3]}" -n 2 "$HELLO" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc -eq 1 ] && grep -q "node ${hosts[2]} is lost" "$tmp/err" || fail "job on the lost node: exit $rc"
on 0 timeout 60 "${RUN[@]}" -n 6 -T 50 "$HELLO" >"$tmp/out" 2>"$tmp/err" ||
    { cat "$tmp/out" "$tmp/err"; fail "a job on the live nodes after the loss"; }
[ "$(grep -c 'bye rank' "$tmp/out")" -eq 6 ] || fail "job on the live nodes: expected 6 byes"
grep -q "host ${hosts[2]}$" "$tmp/out" && fail "job on the live nodes: a rank on the lost node"
# sanitizer builds: no report in any daemon's log
! grep -l 'runtime error:\|ERROR: AddressSanitizer' "$tmp"/d*.log || fail "sanitizer report in a daemon's log"
echo "PASS"
