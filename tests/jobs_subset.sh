#!/bin/bash
# jobs_subset.sh: jobs on part of a 12-node cluster (examples/local.yaml: 4 chassis of 3, 2 sites),
# several at once on one running cluster: two on disjoint nodes and one overlapping both, each
# running libhibar's barrier, split-phase and subset barriers, scatter and gather with the data
# checked (hibar-example), beside PMIx fences with data from a raw PMIx client; a job whose
# nodes hold no Center of their chassis; a job on one node; 16 jobs at once; short jobs in a
# row and 8 at once with nothing left behind; hibar-cluster jobs; placement errors; libhibar's
# subset barriers across nodes on many rank sets at once, beside whole barriers (xsub_check);
# a node that cannot write a job's spec, and one where a job with the same id runs already (their
# refusals reach hibar-run through the send log).
. "$(dirname "$0")/hb_test.sh"
hb_use_run
TEST_TAG=js
HIBAR_TEST_CONFIG=$src/examples/local.yaml
hb_use_cluster
EX="$bld/examples/hibar-example"
FC="$bld/tests/fence_client"
XS="$bld/tests/xsub_check"
[ -x "$EX" ] && [ -x "$FC" ] && [ -x "$XS" ] ||
    { echo "SKIP: hibar-example, fence_client or xsub_check not built"; exit 77; }
cp "$EX" "$TMP/hibar-example"
cp "$FC" "$TMP/fence_client"
cp "$XS" "$TMP/xsub_check"
EX="$TMP/hibar-example"
FC="$TMP/fence_client"
XS="$TMP/xsub_check"
up
ROOT_STATS() { cl ctl n00 jobs; }

# job LOG ARGS...: hibar-run on the running cluster in the background (its pid in JOB_PID),
# output in $TMP/LOG.*
job() {
    local log=$1
    shift
    timeout -k 5 120 "$RUN" --config "$CONFIG" "${SETS[@]}" "$@" \
        >"$TMP/$log.out" 2>"$TMP/$log.err" &
    JOB_PID=$!
}
# wait_job PID LOG: the job must end with status 0
wait_job() {
    local rc=0
    wait "$1" || rc=$?
    [ $rc -eq 0 ] || { tail -n 20 "$TMP/$2.out" "$TMP/$2.err"; fail "job $2 failed (exit $rc)"; }
}
example_ok() {
    grep -q "data checked: ok" "$TMP/$1.out" ||
        { cat "$TMP/$1.err"; fail "job $1: no checked data"; }
}

# --- three at once: disjoint n[00-03] and n[06-09], and one overlapping both; fences beside
job a -H 'n[00-03]' -n 8 "$EX"
p1=$JOB_PID
job b -H 'n[06-09]' -n 8 "$EX"
p2=$JOB_PID
job c -H 'n02,n03,n06,n07,n10' -n 5 "$EX"
p3=$JOB_PID
job f -H 'n[04-05],n[10-11]' -n 8 "$FC" --size 1024 --iters 20
p4=$JOB_PID
# while they run, the root lists them
seen=0
for _ in $(seq 100); do
    n=$(cl jobs 2>/dev/null | grep -c running)
    [ "$n" -gt "$seen" ] && seen=$n
    [ "$seen" -ge 3 ] && break
    sleep 0.05
done
cl jobs
[ "$seen" -ge 2 ] || fail "hibar-cluster jobs never showed the jobs running at once (most: $seen)"
wait_job "$p1" a
wait_job "$p2" b
wait_job "$p3" c
wait_job "$p4" f
example_ok a
example_ok b
example_ok c
grep -q "^fence size=1024 ranks=8" "$TMP/f.out" || fail "fence job: no result line"

# --- while a job runs on n[00-03]: the default placement takes free nodes, --exclusive refuses
# to share one (exit 1, naming it), nothing of the refused job is left
job long -H 'n[00-03]' -n 4 "$FC" --size 64 --iters 100000
p1=$JOB_PID
for _ in $(seq 100); do cl jobs 2>/dev/null | grep -q running && break; sleep 0.05; done
run 0 --config "$CONFIG" "${SETS[@]}" -n 2 -t "$HELLO" --fences 1
grep -q "host n0[0-3]$" "$OUT" && { cat "$OUT"; fail "the default placement took a busy node"; }
grep -q "host n04$" "$OUT" ||
    { cat "$OUT"; fail "the default placement did not take the first free node"; }
run 1 --config "$CONFIG" "${SETS[@]}" --exclusive -H 'n[03-04]' -n 2 "$HELLO"
grep -q "exclusive: .* n03" "$ERR" || fail "--exclusive did not name the shared node"
kill -TERM "$p1"
wait "$p1" 2>/dev/null

# --- a job whose nodes hold no Center (n00 n03 n06 n09 are), and one on a single node
job nc -H 'n01,n04,n08,n11' -n 4 "$EX"
p1=$JOB_PID
job one -H n05 -n 3 "$EX"
p2=$JOB_PID
wait_job "$p1" nc
wait_job "$p2" one
example_ok nc
example_ok one

# --- subset barriers across nodes (each rank set on its own engine): 8 rank sets, overlapping
# and disjoint, their barriers overlapped with one another and with whole barriers, in a job on
# every chassis (2 ranks per node) beside a second one on the other nodes; a counter per set in
# a file both map checks that every release came after the last member's arrival
for x in xs1 xs2; do truncate -s 72 "$TMP/$x.cnt"; done
job xs1 -H 'n[01-02],n04,n07,n[10-11]' -n 12 "$XS" --shm "$TMP/xs1.cnt" --rounds 150 --seed 3
p1=$JOB_PID
job xs2 -H 'n00,n03,n05,n06,n08,n09' -n 6 "$XS" --shm "$TMP/xs2.cnt" --rounds 150 --seed 4
p2=$JOB_PID
wait_job "$p1" xs1
wait_job "$p2" xs2
grep -q "^xsub_check: ok [0-9]* subset barriers .* whole barriers on 12 ranks" "$TMP/xs1.out" ||
    fail "xs1: no success line"
grep -q "^xsub_check: ok .* on 6 ranks" "$TMP/xs2.out" || fail "xs2: no success line"
cat "$TMP/xs1.out" "$TMP/xs2.out"

# --- 16 jobs at once, on one or two nodes each
pids=()
for i in $(seq 0 15); do
    a=$((i % 12))
    b=$(((i + 5) % 12))
    job m$i -H "$(printf 'n%02d,n%02d' "$a" "$b")" -n 2 "$EX"
    pids+=("$JOB_PID")
done
for i in $(seq 0 15); do
    wait_job "${pids[$i]}" m$i
    example_ok m$i
done

# --- a node that cannot take a job's spec (the file the daemon writes it to for its launcher is
# a directory here): the job ends at once with that node's error, and the same nodes run the
# next job. The job's id is hibar-run's start time (s) << 22 ^ its pid, so the directories are
# made for the seconds around its start
# held_run NAME: hibar-run of pmix_hello on n06 and n07, held before it starts (until
# $TMP/NAME.go exists) so that its pid, and with it its job id, is known first: HELD (the
# background job) and HELD_PID (hibar-run's pid)
held_run() {
    timeout -k 5 120 bash -c 'echo $$ >"$1"; while [ ! -e "$2" ]; do sleep 0.02; done; shift 2
        exec "$@"' _ "$TMP/$1.pid" "$TMP/$1.go" "$RUN" --config "$CONFIG" "${SETS[@]}" \
        -H 'n06,n07' -n 2 "$HELLO" --fences 2 >"$TMP/$1.out" 2>"$TMP/$1.err" &
    HELD=$!
    for _ in $(seq 200); do
        [ -s "$TMP/$1.pid" ] && break
        sleep 0.05
    done
    HELD_PID=$(cat "$TMP/$1.pid")
}
held_run spec
t=$(date +%s)
for s in $(seq $((t - 1)) $((t + 10))); do
    mkdir "$RUN_DIR/hibar-relay-$(((s << 22) ^ HELD_PID))-n07.spec"
done
touch "$TMP/spec.go"
rc=0
wait $HELD || rc=$?
rmdir "$RUN_DIR"/hibar-relay-*-n07.spec
[ $rc -ne 0 ] && [ $rc -ne 124 ] ||
    { cat "$TMP/spec.err"; fail "spec: exit $rc, expected a failure"; }
grep -q "n07.*cannot write the job spec" "$TMP/spec.err" ||
    { cat "$TMP/spec.err"; fail "spec: n07's error was not reported"; }
run 0 --config "$CONFIG" "${SETS[@]}" -H 'n06,n07' -n 2 "$HELLO" --fences 2
echo "spec: $(grep -m1 "cannot write the job spec" "$TMP/spec.err")"

# --- a node where a job with the same id runs already (launched there through its control
# socket, one for each of the seconds around hibar-run's start): it refuses its part, hibar-run
# fails at once naming it, and the jobs that were there go on
HOLD_LAUNCH='import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(("launch %s\n" % sys.argv[2]).encode())
for line in s.makefile():
    print(line, end="", flush=True)'
exists_case() {
    held_run ex
    t=$(date +%s)
    lpids=()
    for s in $(seq "$t" $((t + 5))); do
        printf 'hibar-job 1\nid %s\nsize 1\ntag 0\nmap 7\narg 10:/bin/sleep\narg 3:120\n' \
            $(((s << 22) ^ HELD_PID)) >"$TMP/ex-$s.spec"
        # "launch" on n07's control socket, held open: the job lives while its output is read
        timeout -k 5 150 python3 -c "$HOLD_LAUNCH" "$RUN_DIR/n07.sock" "$TMP/ex-$s.spec" \
            >"$TMP/ex-$s.out" 2>&1 &
        lpids+=($!)
    done
    for s in $(seq "$t" $((t + 5))); do
        for _ in $(seq 200); do
            grep -q "ok launch" "$TMP/ex-$s.out" && break
            sleep 0.05
        done
        grep -q "ok launch" "$TMP/ex-$s.out" ||
            { cat "$TMP/ex-$s.out"; fail "exists: no job launched on n07"; }
    done
    tgo=$(date +%s)
    touch "$TMP/ex.go"
    rc=0
    wait $HELD || rc=$?
    if [ "$tgo" -le $((t + 4)) ]; then # hibar-run started within the seconds the ids were made for
        [ $rc -ne 0 ] && [ $rc -ne 124 ] ||
            { cat "$TMP/ex.err"; fail "exists: exit $rc, expected a failure"; }
        grep -q "n07.*a job with this id exists on this node" "$TMP/ex.err" ||
            { cat "$TMP/ex.err"; fail "exists: n07's refusal was not reported"; }
        echo "exists: $(grep -m1 "a job with this id exists" "$TMP/ex.err")"
    else
        echo "exists: not checked, the launches took past the seconds of the ids (loaded host)"
    fi
    for p in "${lpids[@]}"; do
        kill -0 "$p" 2>/dev/null ||
            { tail -n 5 "$TMP"/ex-*.out; fail "exists: a job on n07 ended with hibar-run's"; }
        kill "$p"
    done
    wait "${lpids[@]}" 2>/dev/null
}
if command -v python3 >/dev/null; then
    exists_case
else
    echo "exists: not checked (no python3 to hold a control connection open)"
fi

# --- short jobs in a row, then 8 at once: nothing may remain
rss0=$(ps -o rss= -p "$(cat "$RUN_DIR"/n00.pid)")
for i in $(seq 1 "${HIBAR_TEST_SHORT_JOBS:-200}"); do
    timeout -k 5 60 "$RUN" --config "$CONFIG" "${SETS[@]}" -H "n0$((i % 4)),n1$((i % 2))" -n 2 \
        "$HELLO" --fences 1 >"$OUT" 2>"$ERR" || fail "short job $i failed"
done
pids=()
for i in $(seq 0 7); do
    job s$i -H "n$(printf %02d $((i + 2)))" -n 2 "$HELLO"
    pids+=("$JOB_PID")
done
for i in $(seq 0 7); do wait_job "${pids[$i]}" s$i; done
rss1=$(ps -o rss= -p "$(cat "$RUN_DIR"/n00.pid)")
echo "root daemon RSS: $rss0 KiB before the short jobs, $rss1 KiB after"
# (an AddressSanitizer build keeps freed memory in its quarantine, up to 256 MiB: its RSS says
# nothing of leaks there, LeakSanitizer does at the daemons' exit)
if grep -q -a __asan_init "$HIBARD"; then
    echo "AddressSanitizer build: the RSS bound is not checked"
else
    [ "$rss1" -lt $((rss0 + 20000)) ] || fail "the root daemon grew from $rss0 to $rss1 KiB"
fi
for _ in $(seq 50); do
    ROOT_STATS | grep -q "ok jobs=0" && break
    sleep 0.1
done
ROOT_STATS | grep -q "ok jobs=0" || fail "job slots left: $(ROOT_STATS)"
for n in $(seq -f 'n%02g' 0 11); do
    [ "$(stat_of "$n" relay_jobs)" = 0 ] || fail "$n: a relayed job record was left"
done
left=$(ls "$RUN_DIR" | grep -v -E '\.(sock|pid|port|log|key|ranks|pmix)$' || true)
[ -z "$left" ] || fail "files left in the run dir: $left"

# --- bad placements: refused before anything starts, nothing left
run 2 --config "$CONFIG" "${SETS[@]}" -H 'n[03-04],n99' -n 2 "$HELLO"
grep -q "n99" "$ERR" || fail "an unknown node was not named"
printf 'n01 slots=1\nn02 slots=1\n' >"$TMP/hosts"
run 2 --config "$CONFIG" "${SETS[@]}" --hostfile "$TMP/hosts" -n 3 "$HELLO"
grep -q "slot" "$ERR" || fail "more ranks than slots: no message about slots"
ROOT_STATS | grep -q "ok jobs=0" || fail "a refused job holds a slot"

down
hb_cluster_clean
hb_run_clean
echo "PASS: jobs_subset"
