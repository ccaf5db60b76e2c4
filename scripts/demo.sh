#!/usr/bin/env bash
# `make run` until the gateway and simulator land: a demo identity in a temporary data
# directory, a few entries (one with a side chain), and the feed read back.
set -euo pipefail
DATA="$(mktemp -d -t tinyssb-demo.XXXXXX)"
trap 'rm -rf "$DATA"' EXIT
say() { printf '\n== %s\n' "$*"; }

say "tinyssb id   (a new identity in $DATA)"
tinyssb --data "$DATA" id

say "tinyssb publish ..."
tinyssb --data "$DATA" publish "hello from tinySSB"
tinyssb --data "$DATA" publish "a second, short post"
python3 - <<'PY' | tinyssb --data "$DATA" publish --file -
import sys
text = "A longer post that does not fit into one 120-byte packet, so it travels as a side chain of 100-byte chunks. " * 4
sys.stdout.write(text)
PY

say "tinyssb feeds"
tinyssb --data "$DATA" feeds

say "tinyssb cat me"
tinyssb --data "$DATA" cat me
