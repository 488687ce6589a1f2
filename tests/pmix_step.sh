#!/bin/bash
# pmix_step.sh: each job's PMIx server lives in a step process that ends with the job, so
# libpmix 4.2.2's leak (about one copy of every fence's data, doc/fence.md) does not make
# hibard grow. On an emulated cluster, several jobs of many fences with data: after a warm-up
# job, no daemon's rss_kb grows by more than BOUND_KB over the jobs (a memory bound, generous:
# measured +40-80 KB; with the PMIx server inside hibard the same jobs added 18.5 MB to each
# daemon), and after each job no step process and no step tmp dir is left. A step killed
# mid-job ends that job with a clear error; the next job runs. A step ends with its daemon.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
hb_prog FC tests/fence_client
NAME="hbps$$"
RD="/tmp/hibar-$(id -u)-$NAME"
CL=(env "HIBARD=$HIBARD" "$bld/tools/hibar-cluster" --config "$FOUR" --set "cluster=$NAME"
    --set "run_dir=$RD" --keep-logs)
SETS=(--config "$FOUR" -o "cluster=$NAME" -o "run_dir=$RD")
EXTRA_CLEANUP='"${CL[@]}" down >/dev/null 2>&1; rm -rf "$RD"'
LOG_DIR="$RD"
JOBS=4
ITERS=400      # fences with data per job (8 ranks x 1 KiB: 8 KiB collected per fence)
BOUND_KB=6144  # per daemon, over JOBS x ITERS fences
"${CL[@]}" up >/dev/null || fail "cluster did not come up"

steps() { pgrep -f -- "--pmix-step 3 $RD/" || true; }

# rss_kb of every daemon, one per line, in node order
rss() {
    "${CL[@]}" ctl all stats | tr ' ' '\n' | sed -n 's/^rss_kb=//p'
}

# after a job: its steps end (bounded wait against a hang, not a time check), tmp dirs go
steps_gone() {
    local i
    for i in $(seq 200); do
        [ -z "$(steps)" ] && [ -z "$(find "$RD" -path '*.pmix/*' 2>/dev/null)" ] && return 0
        sleep 0.1
    done
    ps -o pid,args -p "$(steps | tr '\n' ',' | sed 's/,$//')" 2>/dev/null
    ls -la "$RD"/*.pmix
    fail "$1: a PMIx step (process or tmp dir) outlived its job"
}

fence_job() {
    run 0 "${SETS[@]}" -n 8 "$FC" --size 1024 --iters "$ITERS"
    [ "$(grep -c '^ok rank' "$OUT")" -eq 8 ] || fail "$1: not every rank checked its data"
    steps_gone "$1"
}

fence_job "warm-up"
mapfile -t before < <(rss)
[ "${#before[@]}" -eq 4 ] || fail "rss_kb of 4 daemons expected: ${before[*]}"
for j in $(seq "$JOBS"); do
    fence_job "job $j"
done
mapfile -t after < <(rss)
# a sanitizer build's daemon keeps freed memory in AddressSanitizer's quarantine: no bound there
asan=$(ldd "$HIBARD" 2>/dev/null | grep -c libasan)
for i in 0 1 2 3; do
    echo "rt$i: rss_kb ${before[i]} -> ${after[i]} over $((JOBS * ITERS)) fences with data"
    [ "$asan" -gt 0 ] || [ $((after[i] - before[i])) -le "$BOUND_KB" ] ||
        fail "rt$i grew by $((after[i] - before[i])) KB over $((JOBS * ITERS)) fences"
done
"${CL[@]}" ctl all stats | grep -q " pmix_steps=0 pmix_bad=0 " || fail "stats: steps or bad"

# hang_job NODE: a job whose rank 5 never comes to its fence, in the background (job); s: its
# PMIx step on NODE
hang_job() {
    timeout -k 5 60 "$RUN" "${SETS[@]}" -n 8 "$FC" --size 10 --hang-rank 5 >"$OUT" 2>"$ERR" &
    job=$!
    s=
    for _ in $(seq 300); do
        s=$(pgrep -f -- "--pmix-step 3 $RD/$1.pmix/" || true)
        [ -n "$s" ] && return 0
        sleep 0.1
    done
    fail "no PMIx step of the job on $1"
}

# a step killed while its job waits in a fence: the job ends with the reason, the next one runs
hang_job rt1
sleep 1 # the ranks are in their fence (not a check: the job fails the same either way)
kill -9 $s
wait $job
rc=$?
# the ranks of rt1 lose their server too: which of them and the daemon reports first varies,
# the exit status with it (1, or a rank's)
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] ||
    fail "hibar-run exit $rc after its step was killed"
grep -q "PMIx server process died (signal 9)\|PMIx server process .*ended" "$ERR" "$RD/rt1.log" ||
    fail "the step's death is not reported"
steps_gone "killed step"
fence_job "after the killed step"
"${CL[@]}" ctl rt1 status | grep -q " pmix=ok" || fail "rt1 status"

# hibard killed while its job runs: its step does not outlive it (end of file on the socket,
# and the parent-death signal)
hang_job rt2
d=$(pgrep -f -- "--node rt2 .*cluster=$NAME") || fail "no daemon of rt2"
kill -9 "$d"
for _ in $(seq 200); do kill -0 "$s" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$s" 2>/dev/null || fail "rt2's PMIx step outlived its daemon"
wait $job

"${CL[@]}" down >/dev/null || fail "cluster down"
LOG_DIR=
rm -rf "$RD"
EXTRA_CLEANUP=:
check_clean
echo "PASS: pmix_step"
