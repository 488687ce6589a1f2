#!/bin/bash
# boot_slurm.sh: integration test: Debian's Slurm (munge, slurmctld, one slurmd per namespace host) starts hibard with `srun --mpi=pmix` (bootstrap pmix) and without PMIx (bootstrap env) on 3 hosts; hibar-run pmix_hello across them, and pmix_hello and hibar-example on 2 of the 3; srun's end stops every daemon; three sbatch jobs of README's batch script in a row leave no segment, key or run dir (a later daemon reclaims what SIGKILLed ones left).
# Skips (77) without root, Slurm, munge, Slurm's mpi/pmix plugin or the test bed.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
tb=$src/tests/netns/testbed
name=${HB_BOOT_NAME:-bs$$} # the bed, the Slurm and the hibar cluster share it
export HB_BOOT_NAME=$name
. "$src/tests/hb_test.sh"
hb_use_bed "$name" # run_dir, bed_done, stop_daemons, wait_up N, wait_gone

if [ "${1-}" != --inside ]; then
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
    for p in munged slurmctld slurmd srun sinfo; do
        command -v $p >/dev/null || { echo "SKIP: no $p (apt-get install slurm-wlm munge)"; exit 77; }
    done
    ls /usr/lib/*/slurm-wlm/mpi_pmix*.so >/dev/null 2>&1 ||
        { echo "SKIP: Slurm's mpi/pmix plugin is missing (apt-get install slurm-wlm-basic-plugins)"; exit 77; }
    for f in "$bld/daemon/hibard" "$bld/tools/hibar-boot" "$bld/tools/hibar-run" "$bld/tests/pmix_hello"; do
        [ -x "$f" ] || { echo "SKIP: $f not built"; exit 77; }
    done
    export ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0
    timeout -s TERM 480 "$tb" --sites 1 --nodes 3 --name "$name" -- bash "$0" --inside
    rc=$?
    "$src/tests/slurm/down" "$name"
    bed_done $rc
fi

# ---- inside the bed -------------------------------------------------------------------------
tmp=$(mktemp -d /tmp/hibar-boot-slurm.XXXXXX)
srun_pid=''
cleanup() {
    [ -n "$srun_pid" ] && kill -TERM "$srun_pid" 2>/dev/null
    stop_daemons
    "$src/tests/slurm/down" "$name"
    rm -rf "$tmp" "$run_dir" /tmp/hibar-"$(id -u)"-"$name"-job* /dev/shm/hibar-"$(id -u)"-"$name"-job*
}
on_exit cleanup
read -r -a hosts <<<"$(for hp in $HIBAR_TESTBED_HOSTS; do printf '%s ' "${hp%%:*}"; done)"
hibard=$bld/daemon/hibard
on0() { "$HIBAR_TESTBED_HOSTEXEC" "${hosts[0]}" "$@"; }

t0=$(date +%s.%N)
"$src/tests/slurm/up" "$name" >"$tmp/up.out" 2>&1 || { cat "$tmp/up.out"; fail "Slurm did not come up"; }
export SLURM_CONF=/tmp/hibar-$name.slurm/slurm.conf
echo "Slurm up (munged, slurmctld, 3 slurmd) in $(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $t0 }") s"
on0 sinfo -N

# 1. srun --mpi=pmix: one hibard per node, bootstrap pmix
t0=$(date +%s.%N)
on0 srun -O --mpi=pmix -N 3 --ntasks-per-node=1 \
    "$hibard" -f -l info -o "cluster=$name" -o bootstrap=pmix >"$tmp/daemons.log" 2>&1 &
sleep 0.5
srun_pid=$(pgrep -f -- "^srun .*cluster=$name" | head -1)
wait_up 3 || { cat "$tmp/daemons.log"; fail "3 daemons did not come up under srun --mpi=pmix"; }
echo "3 daemons up under srun --mpi=pmix in $(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $t0 }") s"
cat "$run_dir/cluster.yaml"
for h in "${hosts[@]}"; do
    grep -q "name: \"$h\", address: \"10\.231\.0\.[1-3]\"" "$run_dir/cluster.yaml" || fail "host $h missing"
done
sleep 1
"$bld/tools/hibar-run" --config "$run_dir/cluster.yaml" -n 6 -T 60 -t "$bld/tests/pmix_hello" >"$tmp/run.out" 2>&1
rc=$?
cat "$tmp/run.out"
[ $rc -eq 0 ] || { cat "$tmp/daemons.log"; fail "hibar-run exited $rc"; }
[ "$(grep -c 'bye rank [0-5] after 2 fences' "$tmp/run.out")" -eq 6 ] || fail "expected 6 byes"
[ "$(grep -o 'host hibar-[^ ]*' "$tmp/run.out" | sort -u | wc -l)" -eq 3 ] || fail "ranks not on 3 hosts"
# jobs on part of the allocation: two of the three hosts, a PMIx and a libhibar program
"$bld/tools/hibar-run" --config "$run_dir/cluster.yaml" -H "${hosts[0]},${hosts[2]}" -n 4 -T 60 \
    "$bld/tests/pmix_hello" >"$tmp/part.out" 2>&1 || { cat "$tmp/part.out"; fail "hibar-run on 2 of 3"; }
[ "$(grep -c 'bye rank [0-3] after 2 fences' "$tmp/part.out")" -eq 4 ] || fail "2 of 3: expected 4 byes"
[ "$(grep -o 'host hibar-[^ ]*' "$tmp/part.out" | sort -u | wc -l)" -eq 2 ] || fail "2 of 3: hosts"
grep -q "host ${hosts[1]}\$" "$tmp/part.out" && fail "2 of 3: a rank on the host left out"
if [ -x "$bld/examples/hibar-example" ]; then
    "$bld/tools/hibar-run" --config "$run_dir/cluster.yaml" -H "${hosts[1]},${hosts[2]}" -n 4 -T 60 \
        "$bld/examples/hibar-example" >"$tmp/ex.out" 2>&1 || { cat "$tmp/ex.out"; fail "libhibar on 2 of 3"; }
    grep -q "data checked: ok" "$tmp/ex.out" || { cat "$tmp/ex.out"; fail "libhibar on 2 of 3: data"; }
fi
echo "jobs on 2 of the 3 hosts: ok"
[ -n "$srun_pid" ] || fail "cannot find srun's pid"
kill -TERM "$srun_pid"
wait_gone || fail "hibards outlived srun"
srun_pid=''
wait
echo "srun stopped: every daemon exited"
rm -rf "$run_dir" # srun killed them (SIGKILL): phase 3 shows that a later daemon reclaims that

# 2. bootstrap env under srun without PMIx: SLURM_JOB_NODELIST / SLURM_NODEID, rendezvous on node 0
on0 env HIBAR_RENDEZVOUS=10.231.0.1 srun -O --mpi=none -N 3 --ntasks-per-node=1 \
    "$hibard" -l info -o "cluster=$name" -o bootstrap=env -o port=7320 >"$tmp/daemons-env.log" 2>&1 &
sleep 0.5
srun_pid=$(pgrep -f -- "^srun .*cluster=$name" | head -1)
wait_up 3 || { cat "$tmp/daemons-env.log"; fail "3 daemons did not come up with bootstrap env"; }
grep -q 'port: 7321' "$run_dir/cluster.yaml" || fail "env: daemons not on port + 1"
sleep 1
"$bld/tools/hibar-run" --config "$run_dir/cluster.yaml" -n 3 -T 60 "$bld/tests/pmix_hello" >"$tmp/run3.out" 2>&1 ||
    { cat "$tmp/run3.out" "$tmp/daemons-env.log"; fail "hibar-run on the env cluster"; }
[ "$(grep -c 'bye rank [0-2] after 2 fences' "$tmp/run3.out")" -eq 3 ] || fail "env: expected 3 byes"
echo "bootstrap env under srun: 3 daemons, pmix_hello x3 ok"
kill -TERM "$srun_pid"
wait_gone || fail "hibards (env) outlived srun"
srun_pid=''
wait
rm -rf "$run_dir"

# 3. README's batch script, three sbatch jobs in a row, a cluster name per job. Jobs 1 and 2
# end with `kill %1`: srun then forces the step's end, its daemons are killed before they are
# done, which leaves segments and run dir; the next job's daemons reclaim them. Job 3 lets the allocation end: Slurm stops its
# daemons with SIGTERM (SIGKILL after KillWait), and they leave nothing. Nothing is left.
uid=$(id -u)
for i in 1 2 3; do
    cat >"$tmp/job$i.sh" <<JOB
#!/bin/bash
#SBATCH -N 3
cluster=$name-job\$SLURM_JOB_ID
srun --mpi=pmix --ntasks-per-node=1 -o $tmp/hibard-\$cluster-%t.log $hibard -f \\
    -o bootstrap=pmix -o cluster=\$cluster &
conf=/tmp/hibar-$uid-\$cluster/cluster.yaml
for _ in \$(seq 100); do [ -f "\$conf" ] && break; sleep 0.2; done
sleep 1
$bld/tools/hibar-run --config "\$conf" -n 3 -T 60 $bld/tests/pmix_hello
$([ $i -lt 3 ] && echo 'kill %1')
JOB
    jid=$(on0 sbatch --parsable -o "$tmp/job-%j.out" "$tmp/job$i.sh") || fail "sbatch $i"
    for _ in $(seq 600); do # a bound against hangs only
        [ -z "$(on0 squeue -h -j "$jid" 2>/dev/null)" ] && break
        sleep 0.2
    done
    [ -z "$(on0 squeue -h -j "$jid" 2>/dev/null)" ] || fail "batch job $jid did not end"
    [ "$(grep -c 'bye rank [0-2] after 2 fences' "$tmp/job-$jid.out")" -eq 3 ] ||
        { cat "$tmp/job-$jid.out" "$tmp"/hibard-*job"$jid"-*.log; fail "batch job $jid: expected 3 byes"; }
    for _ in $(seq 75); do [ -z "$(pgrep -f -- "cluster=$name-job$jid" || true)" ] && break; sleep 0.2; done
    [ $i -eq 1 ] || grep -h "reclaim\|dead daemons" "$tmp"/hibard-*job"$jid"-*.log
    left=$(ls -d /dev/shm/hibar-"$uid"-"$name"-job* /tmp/hibar-"$uid"-"$name"-job* 2>/dev/null || true)
    echo "after sbatch job $i ($jid):" ${left:-nothing left}
done
[ -z "$left" ] || { ls -la $left; tail -n 5 "$tmp"/hibard-*.log; fail "left by the batch jobs: $left"; }
echo "3 sbatch jobs (README's script): the leftovers of SIGKILL reclaimed, SIGTERM leaves nothing"
echo "PASS"
