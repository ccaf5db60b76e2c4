#!/usr/bin/env bash
# `make demo`: two gateways on loopback WebSocket, a demo feed published on the first,
# replicated to the second, and shown there as it arrived.
set -euo pipefail
WORK="$(mktemp -d -t tinyssb-demo.XXXXXX)"
A="$WORK/alice" B="$WORK/bob"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
say() { printf '\n== %s\n' "$*"; }
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

say "alice publishes three posts (the last one long enough for a side chain)"
ALICE="$(tinyssb --data "$A" id)"
echo "alice is $ALICE"
tinyssb --data "$A" publish "hello from alice's gateway" >/dev/null
tinyssb --data "$A" publish "replicated over WebSocket with GOSET, WANT and CHNK" >/dev/null
python3 -c 'import sys; sys.stdout.write("A longer post that does not fit into one 120-byte packet, so it travels as a side chain of 100-byte chunks. " * 4)' \
    | tinyssb --data "$A" publish --file - >/dev/null
tinyssb --data "$A" feeds

say "two gateways: alice listens on 127.0.0.1:$PORT, bob connects"
tinyssb --data "$A" run --name alice --ws-listen "127.0.0.1:$PORT" --status-interval 5 \
    2> >(sed 's/^/  [alice] /' >&2) &
PIDS+=($!)
for _ in $(seq 100); do
    tinyssb --data "$A" status >/dev/null 2>&1 && break
    sleep 0.1
done
tinyssb --data "$B" run --name bob --connect "ws://127.0.0.1:$PORT" --status-interval 5 \
    2> >(sed 's/^/  [bob]   /' >&2) &
PIDS+=($!)

say "waiting until bob holds alice's feed completely"
for i in $(seq 300); do
    if tinyssb --data "$B" feeds --json 2>/dev/null | python3 -c '
import json, sys
text = sys.stdin.read()
feeds = {f["id"]: f for f in json.loads(text)} if text.strip() else {}
f = feeds.get(sys.argv[1])
sys.exit(0 if f and f["length"] == 3 and f["missing_chunks"] == 0 else 1)' "$ALICE"; then
        echo "complete after $((i / 10)).$((i % 10)) s"
        break
    fi
    if [ "$i" = 300 ]; then echo "bob did not get alice's feed within 30 s" >&2; exit 1; fi
    sleep 0.1
done

say "tinyssb status (bob)"
tinyssb --data "$B" status

say "what arrived at bob: tinyssb cat $ALICE"
tinyssb --data "$B" cat "$ALICE"
