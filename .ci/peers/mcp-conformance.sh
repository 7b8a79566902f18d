#!/usr/bin/env bash
# The official MCP conformance suite (pinned) for the MCP conformance tests (against
# `mcp-serve --conformance` in tests/mcp_conformance.rs, against the orchestrator's /mcp in
# orchestrator/tests/peers/conformance.rs), runnable on Node 20: the suite calls `fs.globSync`
# (Node 22), so a module-resolution hook maps `fs` and `node:fs` to a shim that adds `globSync`
# from the `glob` package (the three files written below).
# Installs into $PATCHBAY_PEERS/mcp-conformance; run the suite with
#   node --import "$PATCHBAY_PEERS/mcp-conformance/register.mjs" \
#        "$PATCHBAY_PEERS/mcp-conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js" ...
# or the wrapper "$PATCHBAY_PEERS/mcp-conformance/conformance" (same arguments). Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PEERS="${PATCHBAY_PEERS:-$ROOT/target/peers}"
DIR="$PEERS/mcp-conformance"
SUITE="@modelcontextprotocol/conformance@0.1.16"
GLOB="glob@11.1.0"
STAMP="$DIR/.installed"
WANT="$SUITE $GLOB"

mkdir -p "$DIR"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && [ -x "$DIR/conformance" ] \
  && [ -x "$DIR/node_modules/.bin/conformance" ]; then
  echo "mcp conformance suite already installed ($WANT)"
  exit 0
fi

cd "$DIR"
rm -rf node_modules package-lock.json "$STAMP"
[ -f package.json ] || echo '{"name":"patchbay-mcp-conformance","private":true}' > package.json
npm install --no-audit --no-fund --loglevel=error --engine-strict=false "$SUITE" "$GLOB"

cat > fs-shim.mjs <<'JS'
export * from 'node:fs';
export { default } from 'node:fs';
export { globSync } from 'glob';
JS
cat > hooks.mjs <<'JS'
const shim = new URL('./fs-shim.mjs', import.meta.url).href;
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== shim) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
JS
cat > register.mjs <<'JS'
import { register } from 'node:module';
register('./hooks.mjs', import.meta.url);
JS
cat > conformance <<'SH'
#!/usr/bin/env bash
# The suite's CLI with the Node 20 fs shim.
HERE="$(cd "$(dirname "$0")" && pwd)"
exec node --import "$HERE/register.mjs" "$HERE/node_modules/.bin/conformance" "$@"
SH
chmod +x conformance
./conformance list >/dev/null
echo "$WANT" > "$STAMP"
echo "mcp conformance suite installed: $WANT"
