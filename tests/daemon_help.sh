#!/usr/bin/env bash
# daemon_help.sh: every control command of hibard's table (hibard --help lists it) is described
# in the man page's CONTROL SOCKET section, and the man page names no command the table lacks.
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
help=$("$bld/daemon/hibard" --help) || { echo "FAIL: hibard --help"; exit 1; }
cmds=$(printf '%s\n' "$help" | sed -n '/^Control socket:/,$p' | awk 'NR > 1 && /^  [a-z]/ {print $1}')
[ -n "$cmds" ] || { echo "FAIL: no command in hibard --help"; exit 1; }
man=$(sed -n '/^\.SH CONTROL SOCKET/,/^\.SH /p' "$src/doc/hibard.8" |
    awk '/^\.TP/ {getline; print $2}' | tr -d '"')
rc=0
for c in $cmds; do
    printf '%s\n' "$man" | grep -qx "$c" || { echo "FAIL: '$c' is not in hibard.8"; rc=1; }
done
for c in $man; do
    printf '%s\n' "$cmds" | grep -qx "$c" || { echo "FAIL: hibard.8 names '$c', not a command"; rc=1; }
done
[ $rc -eq 0 ] && echo "ok: $(echo $cmds | wc -w) commands, in hibard --help and hibard.8"
exit $rc
