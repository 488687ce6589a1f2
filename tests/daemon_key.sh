#!/usr/bin/env bash
# daemon_key.sh: the cluster key file: created 0600 by hibard --gen-key, refused when readable by
# others or when it is not a matching pair; a second daemon for the same node is refused.
TEST_TAG=key
. "$(dirname "$0")/hb_test.sh"
hb_use_cluster
key="$RUN_DIR/test.key"
one=(--config "$CONFIG" --node n00 --set "cluster=$NAME" --set "run_dir=$RUN_DIR"
     --set "nodes=n00" --set "chassis=1" --set "key_file=$key" --foreground)
mkdir -m 700 -p "$RUN_DIR"
"$HIBARD" --gen-key "$key" || fail "--gen-key"
[ "$(stat -c %a "$key")" = 600 ] || fail "key file mode $(stat -c %a "$key"), expected 600"
"$HIBARD" --gen-key "$key" 2>/dev/null && fail "--gen-key overwrote an existing key"
chmod 640 "$key"
out=$(timeout 20 "$HIBARD" "${one[@]}" 2>&1) && fail "started with a group-readable key"
echo "$out" | grep -q "mode 0600" || fail "no mode complaint: $out"
chmod 600 "$key"
sed -i 's/^public=\(.\)/public=X\1/; s/^public=X\(.\{39\}\).*/public=\1/' "$key"
out=$(timeout 20 "$HIBARD" "${one[@]}" 2>&1) && fail "started with a mismatched key pair"
echo "$out" | grep -q "does not match\|expected lines" || fail "no key complaint: $out"
rm -f "$key"
"$HIBARD" --gen-key "$key" || fail "--gen-key"
timeout 60 "$HIBARD" "${one[@]}" --log-file "$RUN_DIR/n00.log" &
for _ in $(seq 100); do cl --set nodes=n00 --set chassis=1 ctl n00 ping >/dev/null 2>&1 && break; sleep 0.1; done
cl --set nodes=n00 --set chassis=1 ctl n00 ping | grep -q "ok pong" || fail "daemon did not start"
out=$(timeout 20 "$HIBARD" "${one[@]}" 2>&1) && fail "a second daemon for n00 started"
echo "$out" | grep -q "already has a daemon" || fail "no refusal: $out"
cl --set nodes=n00 --set chassis=1 ctl n00 shutdown | grep -q "ok bye" || fail "shutdown"
wait
[ ! -e "$RUN_DIR/n00.sock" ] && [ ! -e "$RUN_DIR/n00.pid" ] || fail "socket or pid file left after shutdown"
rm -f "$key" "$RUN_DIR"/*.log
rm -rf "$RUN_DIR"/n00.pmix
rmdir "$RUN_DIR" || { ls -la "$RUN_DIR"; fail "run dir not empty"; }
check_clean
echo "PASS: key file checks and single daemon per node"
