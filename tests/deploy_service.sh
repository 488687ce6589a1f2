#!/bin/bash
# deploy_service.sh: a deployment as a site runs it, on the network-namespace bed (3 hosts):
# hibard started on every host as the packaged service starts it (hibard.service's command
# line: --foreground --config ETC/hibar/hibar.yaml, the node found by its host name; ETC is a
# private directory, a test does not write this machine's /etc), a job run with hibar-run, one
# daemon killed and started again as systemd restarts it (it rejoins, a job runs again), then
# Slurm (slurmctld plus a slurmd per host) running an `sbatch -N 2` script whose hibar-run
# places its ranks on exactly the two allocated nodes.
# Skips (77) without root, Slurm, munge or the test bed.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
tb=$src/tests/netns/testbed
name=${HB_DEPLOY_NAME:-dp$$}
export HB_DEPLOY_NAME=$name
. "$src/tests/hb_test.sh"
hb_use_bed "$name"

if [ "${1-}" != --inside ]; then
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
    for p in munged slurmctld slurmd srun sbatch sinfo; do
        command -v $p >/dev/null || { echo "SKIP: no $p (apt-get install slurm-wlm munge)"; exit 77; }
    done
    for f in "$bld/daemon/hibard" "$bld/tools/hibar-run" "$bld/tests/pmix_hello"; do
        [ -x "$f" ] || { echo "SKIP: $f not built"; exit 77; }
    done
    export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
    timeout -s TERM 240 "$tb" --sites 1 --nodes 3 --name "$name" -- bash "$0" --inside
    rc=$?
    "$src/tests/slurm/down" "$name"
    bed_done $rc
fi

# ---- inside the bed -------------------------------------------------------------------------
tmp=$(mktemp -d /tmp/hibar-deploy.XXXXXX)
etc=$tmp/etc/hibar
pids=()
cleanup() {
    pkill -KILL -f -- "--config $etc/hibar.yaml" 2>/dev/null
    [ ${#pids[@]} -gt 0 ] && kill -TERM "${pids[@]}" 2>/dev/null
    wait 2>/dev/null
    stop_daemons
    "$src/tests/slurm/down" "$name"
    rm -rf "$tmp" "$run_dir"
}
on_exit cleanup
read -r -a hosts <<<"$(for hp in $HIBAR_TESTBED_HOSTS; do printf '%s ' "${hp%%:*}"; done)"
hibard=$bld/daemon/hibard
on() { "$HIBAR_TESTBED_HOSTEXEC" "${hosts[$1]}" "${@:2}"; }

# the site's configuration file, as the package expects it under /etc/hibar
mkdir -p "$etc"
grep -v -E '^(cluster|run_dir):' "$HIBAR_TESTBED_CONFIG" >"$etc/hibar.yaml"
printf 'cluster: %s\nrun_dir: %s\n' "$name" "$run_dir" >>"$etc/hibar.yaml"
cat "$etc/hibar.yaml"
# the unit's ExecStart, one daemon per host (no --node: each finds itself by its host name)
exec_start=$(sed -n 's/^ExecStart=@bindir@\/hibard //p' "$src/systemd/hibard.service.in")
[ "$exec_start" = "--foreground --config @sysconfdir@/hibar/hibar.yaml" ] ||
    fail "hibard.service's command line changed: update this test ($exec_start)"
for i in 0 1 2; do
    on $i "$hibard" --foreground --config "$etc/hibar.yaml" >"$tmp/d$i.log" 2>&1 &
    pids+=($!)
done
wait_up_status() {
    for _ in $(seq 100); do
        "$bld/tools/hibar-cluster" --config "$etc/hibar.yaml" status >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}
wait_up_status || { cat "$tmp"/d*.log; fail "the daemons did not come up as the service starts them"; }
echo "3 daemons up as hibard.service starts them"

# a job with hibar-run on every host
on 0 "$bld/tools/hibar-run" --config "$etc/hibar.yaml" -n 3 -T 60 "$bld/tests/pmix_hello" \
    >"$tmp/run.out" 2>&1 || { cat "$tmp/run.out"; fail "hibar-run on the service's daemons"; }
[ "$(grep -c 'bye rank [0-2] after 2 fences' "$tmp/run.out")" -eq 3 ] || fail "expected 3 byes"
[ "$(grep -o 'host hibar-[^ ]*' "$tmp/run.out" | sort -u | wc -l)" -eq 3 ] || fail "not on 3 hosts"
echo "hibar-run on the 3 hosts: ok"

# a daemon that dies is started again as systemd's Restart=on-failure does (the same command
# line): it rejoins as a new incarnation at its configured port, and a job on every host runs
cl_svc() { "$bld/tools/hibar-cluster" --config "$etc/hibar.yaml" "$@"; }
inc_before=$(cl_svc ctl "${hosts[2]}" status | tr ' ' '\n' | sed -n 's/^inc=//p')
kill -KILL "$(cat "$run_dir/${hosts[2]}.pid")" || fail "no pid file of ${hosts[2]}"
wait "${pids[2]}" 2>/dev/null
for _ in $(seq 300); do
    cl_svc ctl "${hosts[0]}" members | grep -q " ${hosts[2]}:lost:" && break
    sleep 0.1
done
cl_svc ctl "${hosts[0]}" members | grep -q " ${hosts[2]}:lost:" ||
    fail "the killed daemon not held lost"
on 2 "$hibard" --foreground --config "$etc/hibar.yaml" >"$tmp/d2b.log" 2>&1 &
pids[2]=$!
for _ in $(seq 150); do
    inc_after=$(cl_svc ctl "${hosts[2]}" status 2>/dev/null | tr ' ' '\n' | sed -n 's/^inc=//p')
    [ -n "$inc_after" ] &&
        cl_svc ctl "${hosts[0]}" members | grep -q " ${hosts[2]}:up:$inc_after" &&
        cl_svc status >/dev/null 2>&1 && break
    sleep 0.2
done
cl_svc status || { cat "$tmp/d2b.log"; fail "the restarted daemon did not rejoin"; }
[ "$inc_after" != "$inc_before" ] || fail "the restarted daemon has its old incarnation"
on 0 "$bld/tools/hibar-run" --config "$etc/hibar.yaml" -n 3 -T 60 "$bld/tests/pmix_hello" \
    >"$tmp/run2.out" 2>&1 || { cat "$tmp/run2.out"; fail "hibar-run after a daemon's restart"; }
[ "$(grep -c 'bye rank [0-2] after 2 fences' "$tmp/run2.out")" -eq 3 ] || fail "expected 3 byes"
echo "a daemon killed and started again as systemd does rejoined: ok"

# Slurm: an sbatch -N 2 script; its hibar-run uses exactly the allocated nodes
"$src/tests/slurm/up" "$name" >"$tmp/up.out" 2>&1 || { cat "$tmp/up.out"; fail "Slurm did not come up"; }
export SLURM_CONF=/tmp/hibar-$name.slurm/slurm.conf
cat >"$tmp/job.sh" <<SH
#!/bin/bash
echo "allocation \$SLURM_JOB_NODELIST"
exec "$bld/tools/hibar-run" --config "$etc/hibar.yaml" -T 60 -n 4 "$bld/tests/pmix_hello"
SH
chmod +x "$tmp/job.sh"
on 0 sbatch -N 2 --ntasks-per-node=2 -W -o "$tmp/sbatch.out" "$tmp/job.sh" >"$tmp/sbatch.log" 2>&1 ||
    { cat "$tmp/sbatch.log" "$tmp/sbatch.out" 2>/dev/null; fail "sbatch -N 2 failed"; }
cat "$tmp/sbatch.out"
alloc=$(sed -n 's/^allocation //p' "$tmp/sbatch.out")
[ -n "$alloc" ] || fail "the batch script did not run"
[ "$(grep -c 'bye rank [0-3] after 2 fences' "$tmp/sbatch.out")" -eq 4 ] || fail "sbatch: expected 4 byes"
used=$(grep -o 'host hibar-[^ ]*' "$tmp/sbatch.out" | sed 's/^host //' | sort -u)
[ "$(echo "$used" | wc -l)" -eq 2 ] || fail "sbatch: ranks on $(echo "$used" | wc -l) hosts, not the 2 allocated"
allocated=$(on 0 scontrol show hostnames "$alloc" | sort -u)
[ "$used" = "$allocated" ] || fail "sbatch: ranks on '$used', allocated '$allocated'"
echo "sbatch -N 2: 4 ranks on exactly the allocated nodes ($(echo $allocated))"

# stopped as systemd stops it (SIGTERM): nothing of it is left
pkill -TERM -f -- "--config $etc/hibar.yaml"
for _ in $(seq 75); do pgrep -f -- "--config $etc/hibar.yaml" >/dev/null || break; sleep 0.2; done
pgrep -af -- "--config $etc/hibar.yaml" && fail "daemons outlived SIGTERM"
wait
pids=()
left=$(ls "$run_dir" 2>/dev/null | grep -E '\.(sock|pid|port)$' || true)
[ -z "$left" ] || fail "daemons stopped by SIGTERM left $left"
echo "PASS"
