#!/usr/bin/env bash
# The JavaScript AI SDK (`ai`, pinned) for patchbay-ui's real-client tests: its own
# parseJsonEventStream, uiMessageChunkSchema and readUIMessageStream read what the adapter writes.
# Installs into $PATCHBAY_PEERS/ai (node_modules/ai); idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PEERS="${PATCHBAY_PEERS:-$ROOT/target/peers}"
DIR="$PEERS/ai"
AI="ai@7.0.173"
STAMP="$DIR/.installed"
WANT="$AI"

mkdir -p "$DIR"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -f "$DIR/node_modules/ai/package.json" ]; then
  echo "ai peer already installed ($WANT)"
  exit 0
fi

cd "$DIR"
# No stamp or a different pin: start clean (an interrupted npm install leaves a node_modules a
# second install does not repair).
rm -rf node_modules package-lock.json "$STAMP"
[ -f package.json ] || echo '{"name":"patchbay-ai-peer","private":true}' > package.json
# `ai` declares Node >= 22; what the tests use runs on CI's Node 20.
npm install --no-audit --no-fund --loglevel=error --engine-strict=false "$AI"
[ -f node_modules/ai/package.json ] || { echo "ai peer: node_modules/ai missing after install" >&2; exit 1; }
echo "$WANT" > "$STAMP"
echo "ai peer installed: $WANT"
