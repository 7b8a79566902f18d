#!/usr/bin/env bash
# MCP peers for patchbay-mcp's tests (pinned): the reference server, the Inspector CLI and the
# Python SDK (FastMCP server and client). Installs into $PATCHBAY_PEERS/mcp; idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PEERS="${PATCHBAY_PEERS:-$ROOT/target/peers}"
DIR="$PEERS/mcp"
EVERYTHING="@modelcontextprotocol/server-everything@2026.8.31"
INSPECTOR="@modelcontextprotocol/inspector@0.17.2"
PYMCP="mcp==1.30.0"
STAMP="$DIR/.installed"
WANT="$EVERYTHING $INSPECTOR $PYMCP"

mkdir -p "$DIR"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
  && [ -x "$DIR/node_modules/.bin/mcp-server-everything" ] \
  && [ -x "$DIR/node_modules/.bin/mcp-inspector" ] \
  && [ -x "$DIR/venv/bin/python" ] \
  && (cd "$DIR" && npm ls --all >/dev/null 2>&1); then
  echo "mcp peers already installed ($WANT)"
  exit 0
fi

cd "$DIR"
# No stamp, or a tree `npm ls` finds broken: an interrupted npm install leaves a node_modules
# that a second `npm install` does not repair (a missing transitive package), so start clean.
rm -rf node_modules package-lock.json "$STAMP"
[ -f package.json ] || echo '{"name":"patchbay-mcp-peers","private":true}' > package.json
# The Inspector declares a newer Node engine than CI's Node 20 but its CLI runs on it.
npm install --no-audit --no-fund --loglevel=error --engine-strict=false "$EVERYTHING" "$INSPECTOR"
[ -x venv/bin/python ] || python3 -m venv venv
venv/bin/python -m pip install --quiet --disable-pip-version-check "$PYMCP"
echo "$WANT" > "$STAMP"
echo "mcp peers installed: $WANT"
