#!/usr/bin/env bash
# Seed the fuzz corpora from the recorded streams: conformance/fixtures/** (Anthropic and
# OpenAI-compatible SSE, JSON lines) and the claude-agent CLI transcripts. Writes
# fuzz/seeds/<target>/ (not kept; `cargo fuzz cmin` merges it into fuzz/corpus/<target>/, which
# is kept). Each seed starts with the target's header bytes (see each target's docs) and holds
# at most 8 KiB of a recording, cut at a line end, so the fuzzer's inputs stay small.
#
#   fuzz/seed.sh                     # writes fuzz/seeds/
#   cargo +nightly fuzz cmin <target> fuzz/seeds/<target>   # from fuzz/: keep what adds coverage
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf fuzz/seeds
python3 - <<'PY'
import glob, hashlib, json, os

ROOT = "fuzz/seeds"
LIMIT = 8 * 1024

def put(target, data):
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)

def head(body, limit=LIMIT):
    """At most `limit` bytes, cut after a line end when the body is longer."""
    if len(body) <= limit:
        return body
    cut = body.rfind(b"\n", 0, limit)
    return body[: cut + 1] if cut > 0 else body[:limit]

def files(pattern):
    return sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))

anthropic = files("conformance/fixtures/anthropic/**/*")
openai = [p for family in ("openai-chat", "openrouter", "openai-compatible")
          for p in files(f"conformance/fixtures/{family}/**/*")]
transcripts = files("providers/claude-agent/tests/transcripts/*.jsonl")

def json_lines(path):
    return path.endswith(".chunks.txt")

for i, path in enumerate(anthropic + openai + transcripts):
    body = head(open(path, "rb").read())
    framing = 2 if path in transcripts else (1 if json_lines(path) else 0)
    put("framer", bytes([framing, 0, 128, 7]) + body)
    if i % 4 == 0:  # a small cap, so the limit is reached on real lines
        put("framer", bytes([framing, 16, 64, 3]) + body)

for path in anthropic:
    body = head(open(path, "rb").read())
    put("anthropic", bytes([1 if json_lines(path) else 0, 128]) + body)

for path in openai:
    body = head(open(path, "rb").read())
    put("openai_bytes", bytes([1 if json_lines(path) else 0, 128]) + body)

for path in transcripts:
    # The long control lines (tool lists, init) first would fill the seed: keep lines up to 2 KiB.
    lines = [line for line in open(path, "rb").read().splitlines(keepends=True) if len(line) <= 2048]
    body = head(b"".join(lines), 16 * 1024)
    put("claude_agent", bytes([0, 0, 63]) + body)
    put("claude_agent", bytes([1, 4, 7]) + body)

# MCP values: tool results and tool definitions the CLI transcripts carry, plus hand-written
# patchbay results (every content kind and status).
def walk(value):
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk(v)

mcp = set()
for path in transcripts:
    for line in open(path, "rb"):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        for obj in walk(value):
            text = json.dumps(obj, separators=(",", ":")).encode()
            if len(text) > 4096:
                continue
            if isinstance(obj.get("content"), list) and obj["content"] and all(isinstance(c, dict) and "type" in c for c in obj["content"]):
                mcp.add(bytes([0]) + text)
            if "inputSchema" in obj and "name" in obj:
                mcp.add(bytes([2]) + text)
for text in [
    '{"content":[{"type":"text","text":"hi"}],"isError":false}',
    '{"content":[{"type":"text","text":"{\\"a\\":1}","_meta":{"patchbay/json":true}}],"structuredContent":{"a":1}}',
    '{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"audio","data":"aGk=","mimeType":"audio/wav"}],"isError":true,"_meta":{"patchbay/status":"denied"}}',
    '{"content":[{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"x"}},{"type":"resource_link","uri":"file:///b","name":"b"}],"_meta":{"patchbay/metadata":{"k":[1,2.5]}}}',
]:
    mcp.add(bytes([0]) + text.encode())
for text in [
    '{"content":[{"type":"text","text":"hi"},{"type":"json","value":{"a":[1,null]}}],"status":"completed","metadata":{"m":1}}',
    '{"content":[{"type":"image","media_type":"image/png","data":"aGk="},{"type":"resource","uri":"u","mime_type":"text/plain","text":"t","blob":"Yg=="}],"status":"aborted"}',
    '{"content":[{"type":"json","value":1.5e300}],"status":"failed"}',
]:
    mcp.add(bytes([1]) + text.encode())
mcp.add(bytes([3]) + b'{"name":"get_weather","description":"Weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}},"annotations":{"readOnlyHint":true,"title":"W"}}')
for seed in mcp:
    put("mcp_convert", seed)

# Partial JSON: small objects and arrays from the recordings, and their tool inputs streamed
# as `partial_json` / `arguments` pieces, joined and cut.
partial = set()
for path in anthropic + openai + transcripts:
    for line in open(path, "rb"):
        line = line.strip()
        if line.startswith(b"data:"):
            line = line[5:].strip()
        try:
            value = json.loads(line)
        except ValueError:
            continue
        for obj in walk(value):
            text = json.dumps(obj, ensure_ascii=False).encode()
            if 2 < len(text) <= 512:
                partial.add(text)
                partial.add(text[: len(text) // 2])
for seed in sorted(partial)[:2000]:
    put("partial_json", seed)

for target in sorted(os.listdir(ROOT)):
    print(target, len(os.listdir(os.path.join(ROOT, target))))
PY
