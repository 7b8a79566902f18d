#!/usr/bin/env bash
# Claude Code CLI for patchbay-claude-agent's real-peer tests (pinned; see shared PEERS.md: on
# Node 20 an unpinned install picks an old CLI, the pinned one runs with an engine warning), and
# the Python `claude-agent-sdk` for the benchmark only (427 MB: skipped when CI=true unless
# PATCHBAY_BENCH=1; its failure never fails the script).
# Installs into $PATCHBAY_PEERS (node_modules/.bin/claude, claude-venv/); idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PEERS="${PATCHBAY_PEERS:-$ROOT/target/peers}"
CLI="@anthropic-ai/claude-code@2.1.330"
PYSDK="claude-agent-sdk==0.2.184"
STAMP="$PEERS/.claude-installed"

mkdir -p "$PEERS"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$CLI" ] && [ -x "$PEERS/node_modules/.bin/claude" ]; then
  echo "claude peer already installed ($CLI)"
else
  cd "$PEERS"
  [ -f package.json ] || echo '{"name":"patchbay-peers","private":true}' > package.json
  npm install --no-audit --no-fund --loglevel=error --engine-strict=false "$CLI"
  echo "$CLI" > "$STAMP"
  echo "claude peer installed: $CLI"
fi

# Benchmark only: the Python Agent SDK in its own venv.
VENV="$PEERS/claude-venv"
if [ "${CI:-}" = "true" ] && [ -z "${PATCHBAY_BENCH:-}" ] && [ ! -x "$VENV/bin/python" ]; then
  echo "skipping $PYSDK (benchmark only; PATCHBAY_BENCH=1 installs it)"
elif [ -x "$VENV/bin/python" ] && [ -f "$VENV/.installed" ] && [ "$(cat "$VENV/.installed")" = "$PYSDK" ]; then
  echo "claude-agent-sdk already installed ($PYSDK)"
else
  ( python3 -m venv "$VENV" \
    && "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$PYSDK" \
    && echo "$PYSDK" > "$VENV/.installed" \
    && echo "claude-agent-sdk installed: $PYSDK" ) \
    || echo "warning: $PYSDK could not be installed (benchmark comparison only)"
fi
