#!/usr/bin/env bash
# ACP agents for patchbay-acp's real-peer tests (pinned): the Gemini CLI (ACP mode built in),
# Zed's Codex adapter (a native binary in its per-platform package, pinned here too because npm
# can skip the optional dependency) and Zed's Claude adapter (bundles its own Claude Agent SDK).
# Installs into $PATCHBAY_PEERS/acp (node_modules/.bin/{gemini,codex-acp,claude-agent-acp});
# idempotent. See providers/acp/PEERS-NOTES.md for how each one runs offline.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PEERS="${PATCHBAY_PEERS:-$ROOT/target/peers}"
DIR="$PEERS/acp"
GEMINI="@google/gemini-cli@0.61.0"
CODEX="@zed-industries/codex-acp@0.16.0"
CLAUDE="@zed-industries/claude-agent-acp@0.23.1"
# The platform binary codex-acp's launcher execs (an optionalDependency at the same version).
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) CODEX_BIN="@zed-industries/codex-acp-linux-x64@0.16.0" ;;
  Linux-aarch64) CODEX_BIN="@zed-industries/codex-acp-linux-arm64@0.16.0" ;;
  Darwin-arm64) CODEX_BIN="@zed-industries/codex-acp-darwin-arm64@0.16.0" ;;
  Darwin-x86_64) CODEX_BIN="@zed-industries/codex-acp-darwin-x64@0.16.0" ;;
  *) echo "acp peers: no codex-acp binary package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
STAMP="$DIR/.installed"
WANT="$GEMINI $CODEX $CODEX_BIN $CLAUDE"
BIN="$DIR/node_modules/.bin"

mkdir -p "$DIR"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
  && [ -x "$BIN/gemini" ] && [ -x "$BIN/codex-acp" ] && [ -x "$BIN/claude-agent-acp" ]; then
  echo "acp peers already installed ($WANT)"
  exit 0
fi

cd "$DIR"
# No stamp or a different pin: start clean (an interrupted npm install leaves a node_modules a
# second install does not repair).
rm -rf node_modules package-lock.json "$STAMP"
[ -f package.json ] || echo '{"name":"patchbay-acp-peers","private":true}' > package.json
# The Gemini CLI and the Claude adapter declare newer Node engines than CI's Node 20.
npm install --no-audit --no-fund --loglevel=error --engine-strict=false "$GEMINI" "$CODEX" "$CODEX_BIN" "$CLAUDE"
for exe in gemini codex-acp claude-agent-acp; do
  [ -x "$BIN/$exe" ] || { echo "acp peers: $BIN/$exe missing after install" >&2; exit 1; }
done
echo "$WANT" > "$STAMP"
echo "acp peers installed: $WANT"
