#!/bin/bash
# cluster_faults.sh: daemons killed and stopped on a running cluster (doc/design.md section 5.1,
# membership). examples/local.yaml as a chain (fanout 1): 12 nodes, chassis n[00-02] (the root,
# Center n00), then n[03-05] and n[06-08] (inter-level, Centers n03 and n06), then n[09-11]
# (low-end, Center n09), each below a port node of the one before. Each case kills one daemon
# (SIGKILL) while job A, which has a rank on that node, runs an operation, and job B runs on other
# nodes:
#   - A ends with an error naming the node (hibar-run exit != 0), B ends with its data checked;
#   - every daemon left holds the node lost ("hibar-cluster status");
#   - "hibar-cluster restart" brings it back under a new incarnation, and a job with a rank on
#     every node runs (its data checked).
# Cases: a low-end port idle; an inter-level Center in a barrier (the other job's frames cross its
# chassis: they go through a stand-in); a root port node in a fence with data; a low-end Center in
# collectives' data; a port while its job starts; the root Center as the origin of a job
# (hibar-run's daemon); the root killed and not restarted (a new root gives new jobs their slots);
# an inter-level Center that dies holding another job's output on its way (relay), its spec
# (spec), or its verdicts on the sync numbers (drain).
# Then a daemon stopped (SIGSTOP) past the heartbeat timeout and continued rejoins by itself, its
# job ended. The time bounds below are bounds against hangs only.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
TEST_TAG=cf
HIBAR_TEST_CONFIG=$src/examples/local.yaml
hb_use_cluster
SETS+=(--set fanout=1)
hb_prog FC tests/fence_client
hb_prog XC tests/xrank_check
hb_prog EX examples/hibar-example
on_fail 'cat "$TMP"/a.err "$TMP"/b.out "$TMP"/b.err 2>/dev/null | tail -20; cl status'
up
R() { timeout -k 5 120 "$RUN" --config "$CONFIG" "${SETS[@]}" "$@"; }

inc_of() { cl ctl "$1" status | tr ' ' '\n' | sed -n 's/^inc=//p'; }

# wait_for N PID...: until the root lists N running jobs, or one of the jobs ended already (a
# bound, not a measurement)
wait_for() {
    local want=$1 p
    shift
    for _ in $(seq 400); do
        [ "$(cl jobs 2>/dev/null | grep -c running)" -ge "$want" ] && return 0
        for p in "$@"; do kill -0 "$p" 2>/dev/null || return 0; done
        sleep 0.05
    done
    fail "$want jobs did not start"
}

# held NODE lost|up: every running daemon holds NODE lost (a loss), or up again (its new
# incarnation's MEMBER flood); both floods take their time on a loaded host: waited for, bounded
held() {
    local n
    for n in $(ls "$RUN_DIR" | sed -n 's/\.pid$//p'); do
        [ "$n" = "$1" ] && continue
        for _ in $(seq 300); do
            cl ctl "$n" members | grep -q " $1:$2:" && break
            sleep 0.1
        done
        cl ctl "$n" members | grep -q " $1:$2:" || fail "node $n does not hold $1 $2"
    done
}

# everyone: a job with one rank on every node, its data checked
everyone() {
    run 0 --config "$CONFIG" "${SETS[@]}" -n 12 -N 1 "$EX"
    grep -q "12 ranks: .*data checked: ok" "$OUT" || fail "$1: a job on every node"
}

# back NODE OLD_INC: restarted under a new incarnation, every daemon holds it up
back() {
    cl restart "$1" >/dev/null || fail "restart $1"
    local inc
    inc=$(inc_of "$1")
    [ -n "$inc" ] && [ "$inc" != "$2" ] || fail "$1: incarnation $inc after the restart (was $2)"
    cl status >/dev/null || { cl status; fail "$1: not every daemon ready after its restart"; }
    # its new incarnation's MEMBER flood reached every daemon before a job counts on it (a job
    # started while one still held it lost failed with it, on a loaded host)
    held "$1" up
}

# kcase NAME VICTIM A_HOSTS B_HOSTS [A's program...]: A (if any) and B run, VICTIM is killed
kcase() {
    local name=$1 victim=$2 ahosts=$3 bhosts=$4 pa= pb rca=0 rcb=0 old
    shift 4
    old=$(inc_of "$victim")
    if [ $# -gt 0 ]; then
        R -H "$ahosts" -N 1 "$@" >"$TMP/a.out" 2>"$TMP/a.err" &
        pa=$!
    fi
    R -H "$bhosts" -N 1 "$FC" --size 256 --iters 300 >"$TMP/b.out" 2>"$TMP/b.err" &
    pb=$!
    [ "$name" = launch ] || wait_for $(($# > 0 ? 2 : 1)) $pa $pb
    [ "$name" = launch ] || sleep 0.3
    kill -KILL "$(cat "$RUN_DIR/$victim.pid")"
    if [ -n "$pa" ]; then
        wait "$pa" || rca=$?
        [ $rca -ne 0 ] || fail "$name: job A (with $victim) ended with status 0"
        grep -q "$victim" "$TMP/a.err" || fail "$name: job A's error does not name $victim"
    fi
    wait "$pb" || rcb=$?
    [ $rcb -eq 0 ] || fail "$name: job B (without $victim) exit $rcb"
    grep -q "^fence size=256 ranks=.* iters=300" "$TMP/b.out" || fail "$name: job B: no result"
    held "$victim" lost
    back "$victim" "$old"
    everyone "$name"
    echo "ok: $name ($victim)"
}

kcase idle n10 n10 'n[00-02]'
kcase barrier n06 'n[03-08]' 'n[09-11]' "$FC" --no-data --iters 1000000
kcase fence n01 'n[00-02],n07' 'n[09-11],n04' "$FC" --size 1024 --iters 1000000
kcase collectives n09 'n[03-04],n[09-10]' 'n[06-08]' "$XC" --ops 1000000 --max 65536
kcase launch n05 'n[03-05]' 'n[09-11]' "$FC" --size 64 --iters 1000000

# the origin: hibar-run's daemon (the first ready one, n00) is the one killed; B runs after,
# through the next ready daemon
# a_ends NAME SIGNAL VICTIM HOSTS: job A (fences) on HOSTS, VICTIM's daemon gets SIGNAL, A must end
# with an error naming it
a_ends() {
    local rca=0 pa
    R -H "$4" -N 1 "$FC" --size 256 --iters 1000000 >"$TMP/a.out" 2>"$TMP/a.err" &
    pa=$!
    wait_for 1 $pa
    kill "-$2" "$(cat "$RUN_DIR/$3.pid")"
    wait "$pa" || rca=$?
    [ $rca -ne 0 ] && grep -q "$3" "$TMP/a.err" || fail "$1: job A did not end naming $3"
}

old=$(inc_of n00)
a_ends origin KILL n00 'n[03-05]'
held n00 lost
# the root of the live nodes (n01 now) gives slots: a job on other nodes, then one on all but n00
run 0 --config "$CONFIG" "${SETS[@]}" -H 'n[06-11]' -N 1 "$FC" --size 256 --iters 50
grep -q "^fence size=256 ranks=6 .*iters=50" "$OUT" || fail "origin: a job after the root's loss"
run 0 --config "$CONFIG" "${SETS[@]}" -n 11 -N 1 "$EX"
grep -q "11 ranks: .*data checked: ok" "$OUT" || fail "origin: a job on the live nodes"
cl jobs >/dev/null || fail "origin: hibar-cluster jobs without the first root"
back n00 "$old"
everyone origin
echo "ok: origin (n00)"

# a daemon stopped past the heartbeat timeout, then continued: taken for lost, it rejoins by
# itself as a new incarnation; the job it was in ends
old=$(inc_of n11)
a_ends stop STOP n11 'n[09-11]'
held n11 lost
kill -CONT "$(cat "$RUN_DIR/n11.pid")"
for _ in $(seq 600); do
    cl status >/dev/null && [ "$(inc_of n11)" != "$old" ] && break
    sleep 0.05
done
cl status >/dev/null || { cl status; fail "stop: n11 did not rejoin"; }
[ "$(stat_of n11 self_rejoins)" -ge 1 ] || fail "stop: n11 did not count its rejoin"
held n11 up
everyone stop
echo "ok: stop (n11)"

# n06_dies PID WHAT: n06 stopped, the job (PID) let go on ($GO), n06 killed: the job must end
# with status 0
n06_dies() {
    kill -STOP "$(cat "$RUN_DIR/n06.pid")"
    touch "$GO"
    sleep 1
    kill -KILL "$(cat "$RUN_DIR/n06.pid")"
    local rc=0
    wait "$1" || rc=$?
    [ $rc -eq 0 ] || fail "$2 (without n06) exit $rc"
}

# output on its way to the origin through a daemon that dies: job C on n[09-11] prints 100 lines
# a rank, then (once they all arrived) n06, on the way from n[09-11] to hibar-run's daemon, is
# stopped, the ranks print 1900 more (their frames wait in n06), and n06 is killed. Every line
# arrives, in order: the members send again what the origin had not acknowledged
old=$(inc_of n06)
GO=$TMP/go
R -H 'n[09-11]' -N 1 sh -c 'i=0; while [ $i -lt 2000 ]; do [ $i -eq 100 ] &&
    while [ ! -e "$0" ]; do sleep 0.02; done; echo "line $HIBAR_RANK $i"; i=$((i + 1)); done' \
    "$GO" >"$TMP/c.out" 2>"$TMP/c.err" &
pc=$!
for _ in $(seq 600); do
    [ "$(grep -c '^line' "$TMP/c.out")" -ge 300 ] && break
    kill -0 $pc 2>/dev/null || break
    sleep 0.05
done
[ "$(grep -c '^line' "$TMP/c.out")" -eq 300 ] || fail "relay: job C's first lines did not come"
n06_dies $pc "relay: job C"
for r in 0 1 2; do
    seq 0 1999 | sed "s/^/line $r /" >"$TMP/c.want"
    grep "^line $r " "$TMP/c.out" | cmp -s - "$TMP/c.want" ||
        fail "relay: rank $r's lines: $(grep -c "^line $r " "$TMP/c.out") of 2000, or out of order"
done
resent=0
for n in n09 n10 n11; do resent=$((resent + $(stat_of $n relay_resent))); done
[ "$resent" -gt 0 ] || fail "relay: nothing was sent again (n06 was not on the way?)"
held n06 lost
back n06 "$old"
echo "ok: relay (n06): every line of 6000, $resent frames sent again"

# a job's spec on its way through a daemon that dies: n06 stopped, job D on n[09-11] started
# (the origin sends its spec toward n06), n06 killed: the origin sends the spec again to the
# nodes it has not heard from, and the job runs (it waited for them forever)
old=$(inc_of n06)
kill -STOP "$(cat "$RUN_DIR/n06.pid")"
R -H 'n[09-11]' -N 1 sh -c 'echo "started $HIBAR_RANK"' >"$TMP/d.out" 2>"$TMP/d.err" &
pd=$!
sleep 0.5
kill -KILL "$(cat "$RUN_DIR/n06.pid")"
rcd=0
wait $pd || rcd=$?
[ $rcd -eq 0 ] || fail "spec: job D (without n06) exit $rcd"
[ "$(grep -c '^started [012]$' "$TMP/d.out")" -eq 3 ] || fail "spec: not every rank of job D ran"
held n06 lost
back n06 "$old"
echo "ok: spec (n06)"

# the verdicts on a job's sync numbers (DRAIN) on their way through a daemon that dies: job E on
# n00 and n[09-11]; the ranks on n[09-11] end at once and their ends reach the origin (their send
# logs empty, their parts waiting for the verdict), n06 is stopped, rank 0 ends (the origin
# sends DRAIN toward n06) and n06 is killed: the origin sends its verdicts again and the job ends
# with every node clean (before, the nodes' engines waited for the verdict until the barrier
# timeout and logged that their sync numbers did not drain, and only then was the slot given back)
nclean() { cat "$RUN_DIR"/*.log 2>/dev/null | grep -c 'did not report clean\|did not drain within'; }
old=$(inc_of n06)
GO=$TMP/go-e
R -H 'n00,n[09-11]' -N 1 sh -c '[ "$HIBAR_RANK" != 0 ] ||
    while [ ! -e "$0" ]; do sleep 0.02; done; echo "done $HIBAR_RANK"' \
    "$GO" >"$TMP/e.out" 2>"$TMP/e.err" &
pe=$!
settled() {
    [ "$(grep -c '^done [123]$' "$TMP/e.out")" -eq 3 ] || return 1
    local n
    for n in n09 n10 n11; do
        [ "$(stat_of $n relay_draining)" = 1 ] && [ "$(stat_of $n relay_unacked)" = 0 ] || return 1
    done
}
for _ in $(seq 600); do
    settled && break
    kill -0 $pe 2>/dev/null || break
    sleep 0.05
done
settled || fail "drain: job E's ranks on n[09-11] did not end, or their ends were not taken"
# frames sent again by the live daemons: the members' logs are empty, so only the origin's DRAINs
resent() {
    local n t=0
    for n in n00 n01 n02 n03 n04 n05 n07 n08 n09 n10 n11; do
        t=$((t + $(stat_of $n relay_resent)))
    done
    echo $t
}
resent0=$(resent)
nclean0=$(nclean)
n06_dies $pe "drain: job E"
[ "$(grep -c '^done [0123]$' "$TMP/e.out")" -eq 4 ] || fail "drain: not every rank of job E ended"
# hibar-run returns at the ends; the origin gives the slot back once every node is clean
for _ in $(seq 1200); do
    [ "$(cl jobs | grep -cE '^[0-9]+ ')" -eq 0 ] && break
    sleep 0.1
done
[ "$(cl jobs | grep -cE '^[0-9]+ ')" -eq 0 ] || fail "drain: job E's slot was not given back"
[ "$(nclean)" -eq "$nclean0" ] || fail "drain: a verdict did not come, or a node's clean report"
[ "$(resent)" -gt "$resent0" ] || fail "drain: the origin sent no verdict again (n06 not on the way?)"
for n in n09 n10 n11; do
    [ "$(stat_of $n relay_draining)" = 0 ] || fail "drain: $n still waits for its verdict"
done
held n06 lost
back n06 "$old"
echo "ok: drain (n06)"

down
check_clean
echo "PASS: cluster_faults"
