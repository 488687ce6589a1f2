#!/usr/bin/env bash
# run_dir_safe.sh: the run directory is safe in a shared /tmp (common/hb_rundir.h, issue 24
# item 10). hibard and hibar-cluster create it with one mkdir of mode 0700 (a readable one of
# ours, as mkdir -p leaves it, is closed to 0700) and refuse, naming it, a run dir that is a
# symbolic link, that others can write to, or whose parent belongs to another user; as root
# (chown to nobody) also a run dir, a key file and a pid file of another user. A few seconds.
set -u
. "$(dirname "$0")/hb_test.sh"
hibard=$bld/daemon/hibard
cluster_tool=$bld/tools/hibar-cluster
[ -x "$hibard" ] && [ -x "$cluster_tool" ] ||
    { echo "SKIP: hibard or hibar-cluster not built"; exit 77; }
tmp=$(mktemp -d /tmp/hibar-rundir-XXXXXX) || exit 99
chmod 755 "$tmp" # nobody must reach what the root part chowns to it
name=hibarrd$$
on_exit 'rm -rf "$tmp"'
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# a one-node cluster of this host, run dir $1
conf() {
    printf 'cluster: %s\nnodes: %s\nrun_dir: "%s"\nheartbeat:\n  timeout_ms: 2000\n' \
        "$name" "$(hostname)" "$1" >"$tmp/c.yaml"
}
# refused WHAT RUN_DIR PATTERN: hibard exits non-zero at start with PATTERN on stderr
refused() {
    local what=$1 dir=$2 pat=$3 rc
    conf "$dir"
    env -u HIBAR_CONFIG timeout -s KILL 60 "$hibard" -f -c "$tmp/c.yaml" >"$tmp/out" 2>&1
    rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 137 ] && grep -qF -- "$pat" "$tmp/out"; then
        ok "hibard refuses $what"
    else
        bad "hibard and $what: exit $rc, want '$pat' in: $(cat "$tmp/out")"
    fi
}

# a symbolic link to a directory of ours
mkdir -m 700 "$tmp/real"
ln -s "$tmp/real" "$tmp/link"
refused "a run dir that is a symbolic link" "$tmp/link" "run dir $tmp/link is a symbolic link"
# writable by others
mkdir "$tmp/open" && chmod 777 "$tmp/open"
refused "a world-writable run dir" "$tmp/open" "run dir $tmp/open has mode 0777"
mkdir "$tmp/grp" && chmod 770 "$tmp/grp"
refused "a group-writable run dir" "$tmp/grp" "run dir $tmp/grp has mode 0770"
# hibar-cluster (the emulated cluster) refuses it the same way
out=$(env -u HIBAR_CONFIG "$cluster_tool" up -c "$tmp/c.yaml" -o "run_dir=$tmp/link" 2>&1)
rc=$?
[ $rc -ne 0 ] && printf '%s\n' "$out" | grep -qF "run dir $tmp/link is a symbolic link" &&
    ok "hibar-cluster up refuses a symbolic link" || bad "hibar-cluster up, link: $rc $out"

# created afresh: mode 0700; one of ours readable by others (mkdir -p, umask 022) made 0700
d=/tmp/hibar-$(id -u)-$name
rm -rf "$d"
down_d() {
    env -u HIBAR_CONFIG "$cluster_tool" down -c "$tmp/c.yaml" -o "run_dir=$d" >/dev/null 2>&1
}
on_exit 'down_d; rm -rf "$d"'
conf "$d"
for pre in none 755; do
    [ $pre = 755 ] && mkdir -m 755 "$d"
    if env -u HIBAR_CONFIG "$cluster_tool" up -c "$tmp/c.yaml" >"$tmp/out" 2>&1; then
        m=$(stat -c %a "$d")
        [ "$m" = 700 ] && [ "$(stat -c %u "$d")" = "$(id -u)" ] &&
            ok "run dir in /tmp ($pre before): a directory of ours, mode 0700" ||
            bad "run dir $d ($pre before): mode $m"
        env -u HIBAR_CONFIG "$cluster_tool" down -c "$tmp/c.yaml" >/dev/null 2>&1
    else
        bad "hibar-cluster up with a fresh run dir ($pre): $(cat "$tmp/out")"
    fi
    rm -rf "$d"
done

if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
    echo "skip the checks against another user's files (need root and the user nobody)"
else
    # a run dir of another user
    mkdir -m 700 "$tmp/theirs" && chown nobody "$tmp/theirs"
    refused "another user's run dir" "$tmp/theirs" \
        "run dir $tmp/theirs belongs to uid $(id -u nobody) (nobody), not to uid 0 (root)"
    out=$(env -u HIBAR_CONFIG "$cluster_tool" up -c "$tmp/c.yaml" -o "run_dir=$tmp/theirs" 2>&1)
    rc=$?
    [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -qF "run dir $tmp/theirs belongs to uid" &&
        ok "hibar-cluster up refuses another user's run dir" || bad "hibar-cluster up: $rc $out"
    # in a parent directory of another user (not sticky): it could swap the run dir
    mkdir -m 755 "$tmp/par" && chown nobody "$tmp/par"
    refused "a run dir in another user's directory" "$tmp/par/run" \
        "the parent of run dir $tmp/par/run, $tmp/par, belongs to uid $(id -u nobody)"
    # a key file of another user in our run dir
    mkdir -m 700 "$tmp/key"
    k=$tmp/key/cluster.key
    touch "$k" && chmod 600 "$k" && chown nobody "$k"
    refused "another user's key file" "$tmp/key" "key file $k must belong to uid 0"
    # a pid file of another user (the key is ours: hibard gets as far as the pid file)
    mkdir -m 700 "$tmp/pid"
    echo 1 >"$tmp/pid/$(hostname).pid" && chown nobody "$tmp/pid/$(hostname).pid"
    refused "another user's pid file" "$tmp/pid" \
        "pid file $tmp/pid/$(hostname).pid belongs to uid $(id -u nobody) (nobody)"
fi

[ $fails -eq 0 ] || fail "$fails failures"
echo "run dir: ok"
