#!/usr/bin/env bash
# install_check.sh: an installed tree (make install DESTDIR=...) works as a site would use it:
# every installed binary answers --help and --version (exit 0, on stdout) and has a manual
# page, as do the file formats; an empty configuration is refused naming the file; an unknown
# HIBAR_ variable is warned about once; hibar-info --all says where each value came from;
# installed hibard reads its file, logs with ISO-8601 stamps, tells systemd it is ready, and
# survives SIGHUP (re-reading the file, re-opening the log); pkg-config hibar builds a client;
# hibar-bench fence runs from the installed tree, hibar-bench --osu prints the OSU
# micro-benchmarks' table, and (as root) hibar-bench --per-node runs the installed test bed;
# Open MPI's coll component on hibar, where built, is installed and Open MPI loads it.
# About 20 s.
set -u
bld=${top_builddir:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d /tmp/hibar-install-XXXXXX)
dest=$tmp/dest
hbd_pid=
cleanup() {
    [ -n "$hbd_pid" ] && kill "$hbd_pid" 2>/dev/null && wait "$hbd_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# install what make install installs, without the tests/ directory (its check programs are
# being built and run beside this script)
for d in common config hwbarrier hier libclient mpi coll sim daemon tools systemd; do
    make -s -C "$bld/$d" install DESTDIR="$dest" >"$tmp/install.log" 2>&1 ||
        { cat "$tmp/install.log"; echo "FAIL make install in $d"; exit 1; }
done
make -s -C "$bld" install-man DESTDIR="$dest" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; echo "FAIL make install-man"; exit 1; }
bindir=$(dirname "$(find "$dest" -path '*/bin/hibard' | head -1)")
[ -x "$bindir/hibard" ] || { echo "FAIL hibard not installed in a bin directory"; exit 1; }
prefix=$(dirname "$bindir")
mandir=$(dirname "$(find "$dest" -type d -name man1 | head -1)")
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$bld/hb_config.h")

# every binary: --help and --version, exit 0, on stdout; a manual page
n=0
for b in "$bindir"/*; do
    name=$(basename "$b")
    n=$((n + 1))
    out=$("$b" --help 2>"$tmp/err") && [ -n "$out" ] && [ ! -s "$tmp/err" ] &&
        ok "$name --help" || bad "$name --help (exit $?, stderr: $(head -c 200 "$tmp/err"))"
    out=$("$b" --version 2>"$tmp/err") && [ "$(echo "$out" | head -1 | cut -d' ' -f1-2)" = "$name $version" ] &&
        ok "$name --version" || bad "$name --version: '$out' $(head -c 200 "$tmp/err")"
    page=$(ls "$mandir"/man1/"$name".1 "$mandir"/man8/"$name".8 2>/dev/null | head -1)
    if [ -z "$page" ]; then
        bad "$name: no manual page in man1 or man8"
    elif ! grep -q '^\.SH EXIT STATUS' "$page" && ! grep -q '^\.so ' "$page"; then
        bad "$name: $page has no EXIT STATUS section"
    else
        ok "$name: $(basename "$page")"
    fi
done
[ "$n" -ge 9 ] || bad "only $n binaries installed"
for p in man5/hibar.yaml.5 man5/hibar.plogp.5 man3/hibar.3; do
    [ -f "$mandir/$p" ] && ok "$p" || bad "$p not installed"
done
if command -v man >/dev/null; then
    for p in "$mandir"/man*/*; do
        w=$(cd "$mandir" && LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null)
        [ -z "$w" ] || bad "$(basename "$p"): $w"
    done
fi

# pkg-config hibar, and a client built with it
pc=$(find "$dest" -name hibar.pc | head -1)
if [ -z "$pc" ]; then
    bad "hibar.pc not installed"
else
    export PKG_CONFIG_PATH=$(dirname "$pc")
    [ "$(pkg-config --modversion hibar)" = "$version" ] && ok "pkg-config hibar" ||
        bad "pkg-config --modversion hibar"
    cat >"$tmp/c.c" <<'C'
#include <hibar.h>
int main(void) { return hibar_strerror(0) != 0 ? 0 : 1; }
C
    # shellcheck disable=SC2046
    if cc -o "$tmp/c" "$tmp/c.c" $(pkg-config --define-variable=prefix="$prefix" --cflags --libs hibar) \
        2>"$tmp/err" && LD_LIBRARY_PATH=$(dirname "$(find "$dest" -name 'libhibar.so.0' | head -1)") "$tmp/c"; then
        ok "a client built with pkg-config hibar runs"
    else
        bad "client with pkg-config hibar: $(head -c 300 "$tmp/err")"
    fi
fi
unit=$(find "$dest" -name hibard.service | head -1)
[ -n "$unit" ] && grep -q "^ExecStart=.*/bin/hibard --foreground --config .*/hibar/hibar.yaml" "$unit" &&
    grep -q '^Type=notify' "$unit" && grep -q '^ExecReload=.*-HUP' "$unit" &&
    grep -q '^RuntimeDirectory=hibar$' "$unit" &&
    ok "hibard.service" || bad "hibard.service missing or wrong"

# an empty configuration: refused, naming the file (exit 2)
printf '# nothing but a comment\n' >"$tmp/empty.yaml"
for t in hibard hibar-info hibar-run; do
    args=(-c "$tmp/empty.yaml")
    [ $t = hibar-run ] && args+=(-n 1 true)
    "$bindir/$t" "${args[@]}" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] && grep -q "$tmp/empty.yaml:1:1: empty file" "$tmp/err" && ok "$t: empty file refused" ||
        bad "$t: empty file: exit $rc, $(cat "$tmp/err")"
done
# no configuration at all: hibard says what to write where
HIBAR_CONFIG= "$bindir/hibard" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "no configuration: write .*/hibar/hibar.yaml" "$tmp/err" &&
    ok "hibard without a configuration" || bad "hibard without a configuration: $rc $(cat "$tmp/err")"

# an unknown HIBAR_ variable: one warning, with the key it resembles; the run goes on
HIBAR_FANUOT=2 "$bindir/hibar-info" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c 'HIBAR_FANUOT' "$tmp/err")" -eq 1 ] &&
    grep -q 'did you mean HIBAR_FANOUT' "$tmp/err" && ok "unknown HIBAR_FANUOT warned once" ||
    bad "unknown variable: exit $rc, $(cat "$tmp/err")"

# hibar-info --all: value and source of every key
cat >"$tmp/c.yaml" <<Y
cluster: inst$$
nodes: $(hostname)
run_dir: $tmp/run
coll:
  alg: flat
Y
HIBAR_WAIT_SLICE_MS=7 "$bindir/hibar-info" --all -c "$tmp/c.yaml" -o fanout=2 >"$tmp/all" 2>"$tmp/err"
grep -Eq "^coll.alg +\= flat +\($tmp/c.yaml:5\)" "$tmp/all" && grep -Eq '^fanout += 2 +\(-o\)' "$tmp/all" &&
    grep -Eq '^wait.slice_ms += 7 +\(env HIBAR_WAIT_SLICE_MS\)' "$tmp/all" &&
    grep -Eq '^port += 0 +\(default\)' "$tmp/all" && ok "hibar-info --all: values and sources" ||
    { cat "$tmp/all" "$tmp/err"; bad "hibar-info --all"; }

# installed hibard: its node by host name, ISO-8601 log lines, READY=1 to systemd, SIGHUP
python3 - "$tmp/notify" >"$tmp/notified" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
try:
    while True:
        m = s.recv(4096).decode()
        print(m, flush=True)
        if "STOPPING=1" in m:
            break
except socket.timeout:
    pass
PY
py=$!
for _ in $(seq 50); do [ -S "$tmp/notify" ] && break; sleep 0.1; done
NOTIFY_SOCKET=$tmp/notify "$bindir/hibard" -c "$tmp/c.yaml" -f --log-file "$tmp/hibard.log" \
    -l info 2>"$tmp/hibard.err" &
hbd_pid=$!
for _ in $(seq 100); do grep -q READY=1 "$tmp/notified" 2>/dev/null && break; sleep 0.1; done
grep -q READY=1 "$tmp/notified" && ok "hibard: READY=1 on NOTIFY_SOCKET" ||
    bad "hibard: no READY=1 ($(cat "$tmp/hibard.err" "$tmp/hibard.log" 2>/dev/null))"
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z hibard\[.*\]: info: ' \
    "$tmp/hibard.log" && ok "hibard: --log-file lines with ISO-8601 stamps" || bad "log: $(head -3 "$tmp/hibard.log")"
# its counters for Prometheus (node_exporter's textfile collector)
"$bindir/hibar-cluster" metrics -c "$tmp/c.yaml" --output "$tmp/hibar.prom" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && grep -q "^hibar_up{cluster=\"inst$$\",node=\"$(hostname)\"} 1$" "$tmp/hibar.prom" &&
    grep -q '^# TYPE hibar_barriers_total counter$' "$tmp/hibar.prom" &&
    grep -q '^# TYPE hibar_rss_bytes gauge$' "$tmp/hibar.prom" &&
    ! grep -Ev '^(# (HELP|TYPE) hibar_[a-z_]+ .+|hibar_[a-z_]+\{cluster="[^"]*",node="[^"]*"\} [0-9.e+-]+)$' \
        "$tmp/hibar.prom" && ok "hibar-cluster metrics: Prometheus text" ||
    bad "metrics: exit $rc $(cat "$tmp/err"; head -5 "$tmp/hibar.prom")"
sed -i 's/alg: flat/alg: binomial/' "$tmp/c.yaml"
mv "$tmp/hibard.log" "$tmp/hibard.log.1"
kill -HUP "$hbd_pid"
for _ in $(seq 50); do [ -s "$tmp/hibard.log" ] && break; sleep 0.1; done
sleep 0.2
kill -0 "$hbd_pid" 2>/dev/null && grep -q 're-read: applied coll.alg' "$tmp/hibard.log" &&
    ok "hibard: SIGHUP re-read the file and re-opened the log" ||
    bad "SIGHUP: $(cat "$tmp/hibard.log" "$tmp/hibard.err" 2>/dev/null)"
kill "$hbd_pid"
wait "$hbd_pid"
rc=$?
hbd_pid=
[ $rc -eq 0 ] && ok "hibard: clean stop" || bad "hibard exit $rc"
wait $py
grep -q RELOADING=1 "$tmp/notified" && grep -q STOPPING=1 "$tmp/notified" &&
    ok "hibard: RELOADING=1, STOPPING=1" || bad "notify: $(cat "$tmp/notified")"

# hibar-bench fence from the installed tree (its client in libexec/hibar)
if [ -x "$prefix/libexec/hibar/hibar-fence-client" ]; then
    env -u HIBAR_FENCE_CLIENT -u HIBAR_RUN -u HIBARD timeout 120 "$bindir/hibar-bench" fence \
        --nodes 2 --iters 3 --sizes 0 >"$tmp/fence" 2>&1 && grep -q '^0 ' "$tmp/fence" &&
        ok "hibar-bench fence from the installed tree" || bad "fence: $(tail -5 "$tmp/fence")"
else
    bad "libexec/hibar/hibar-fence-client not installed"
fi

# hibar-bench --osu: the OSU micro-benchmarks' table, for hibar and (with mpirun) the Open MPI
# peer alike
cmp_args=()
if command -v mpirun >/dev/null && [ -x "$bindir/hibar-mpi-bench" ]; then
    cmp_args=(--compare)
fi
# the OSU table: title, column header, rows of numbers in their widths
osu_ok() { # FILE TEST-NAME IMPL... : a block per impl
    local f=$1 t=$2 i
    shift 2
    for i in "$@"; do
        grep -q "^# OSU MPI $t Latency Test (hibar-bench $version, impl $i, " "$f" || return 1
    done
    [ "$(grep -c '^# OSU MPI ' "$f")" -eq $# ] || return 1
    local cols='Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations$'
    local num=' {0,17}[0-9]+\.[0-9]{2}'
    if [ "$t" = Barrier ]; then
        [ "$(grep -c "^# $cols" "$f")" -eq $# ] &&
            [ "$(grep -Ec "^$num$num$num {0,11}[0-9]+\$" "$f")" -eq $# ]
    else
        [ "$(grep -c "^# Size       $cols" "$f")" -eq $# ] && grep -Eq "^1024 {6}$num" "$f"
    fi || return 1
    ! grep -Ev '^(# OSU MPI |# (Size {7})?Avg Latency|[ 0-9.]+$)' "$f"
}
(cd / && env -u HIBAR_SRCDIR "$bindir/hibar-bench" barrier --ranks 2 --iters 200 --osu \
    "${cmp_args[@]}") >"$tmp/osu" 2>"$tmp/err" &&
    osu_ok "$tmp/osu" Barrier hibar ${cmp_args[0]:+open-mpi} &&
    ok "hibar-bench barrier --osu ${cmp_args[*]} from the installed tree" ||
    bad "barrier --osu: $(cat "$tmp/osu" "$tmp/err")"

# hibar-bench --per-node from the installed tree: the test bed and its scripts from
# libexec/hibar/netns, the installed daemons and benches (root, network namespaces)
if [ "$(id -u)" -ne 0 ]; then
    echo "skip hibar-bench --per-node from the installed tree (needs root)"
else
    (cd / && env -u HIBAR_SRCDIR -u top_builddir -u top_srcdir "$bindir/hibar-bench" barrier \
        --ranks 4 --per-node 2 --iters 50 --bed-name "hbi$$" --bed-net 10.247 "${cmp_args[@]}") \
        >"$tmp/pn" 2>&1
    rc=$?
    if [ $rc -eq 77 ]; then
        echo "skip hibar-bench --per-node from the installed tree (no network namespaces here)"
    elif [ $rc -eq 0 ] && grep -q "^# '$prefix/bin/../libexec/hibar/netns/testbed' " "$tmp/pn" &&
        grep -qF -- "-- '$prefix/bin/../libexec/hibar/netns/client-compare' " "$tmp/pn" &&
        grep -Eq '^0 +[0-9]+\.[0-9]{2} ' "$tmp/pn"; then
        ok "hibar-bench barrier --per-node ${cmp_args[*]}: the installed test bed"
    else
        bad "--per-node from the installed tree (exit $rc): $(tail -20 "$tmp/pn")"
    fi
    (cd / && env -u HIBAR_SRCDIR -u top_builddir -u top_srcdir "$bindir/hibar-bench" scatter \
        --ranks 4 --per-node 2 --iters 20 --sizes 1K --bed-name "hbi$$" --bed-net 10.247 --osu \
        "${cmp_args[@]}") >"$tmp/pnosu" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 77 ]; then
        :
    elif [ $rc -eq 0 ] && osu_ok "$tmp/pnosu" Scatter hibar ${cmp_args[0]:+open-mpi}; then
        ok "hibar-bench scatter --per-node --osu ${cmp_args[*]}: one OSU table per implementation"
    else
        bad "scatter --per-node --osu (exit $rc): $(cat "$tmp/pnosu"; tail -5 "$tmp/err")"
    fi
fi

# mca_coll_hibar (built when configure found Open MPI's coll headers): installed, and Open MPI
# lists it from there (ompi_info with the directory that hibar-run adds)
comp=$(grep -q '^#define HB_HAVE_OMPI_COLL 1' "$bld/hb_config.h" &&
    find "$dest" -name mca_coll_hibar.so | head -1)
if [ -n "$comp" ] && command -v ompi_info >/dev/null; then
    pkglib=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
    if LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        OMPI_MCA_mca_base_component_path="$pkglib:$(dirname "$comp")" ompi_info 2>&1 |
        grep -q "MCA coll: hibar"; then
        ok "mca_coll_hibar installed ($comp), listed by ompi_info"
    else
        bad "ompi_info does not list the installed mca_coll_hibar ($comp)"
    fi
elif grep -q '^#define HB_HAVE_OMPI_COLL 1' "$bld/hb_config.h"; then
    bad "mca_coll_hibar built but not installed"
fi

[ $fails -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "installed tree: ok"
