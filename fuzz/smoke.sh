#!/usr/bin/env bash
# Fuzz smoke for CI: every target for a few seconds (about a minute in all) from the kept
# corpus, failing on the first crash, hang or memory blow-up. Installs the pinned cargo-fuzz
# when it is missing; needs the nightly toolchain (libFuzzer's instrumentation).
#   bash fuzz/smoke.sh            # SMOKE_SECONDS=N to change the time per target (default 7)
set -euo pipefail
cd "$(dirname "$0")"
CARGO_FUZZ_VERSION=0.13.2
seconds=${SMOKE_SECONDS:-7}
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz smoke: the nightly toolchain is missing (rustup toolchain install nightly)" >&2
  exit 1
fi
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
cargo +nightly fuzz build
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in $(cargo +nightly fuzz list); do
  mkdir -p "$scratch/$target"
  started=$(date +%s)
  # New inputs go to the scratch folder, so the kept corpus is only read.
  if ! cargo +nightly fuzz run "$target" "$scratch/$target" "corpus/$target" -- \
      -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
      >"$scratch/$target.log" 2>&1; then
    tail -n 60 "$scratch/$target.log"
    echo "fuzz smoke: $target failed; the input is under fuzz/artifacts/$target/" >&2
    exit 1
  fi
  echo "fuzz smoke: $target ok ($(( $(date +%s) - started )) s, $(grep -o 'Done [0-9]* runs' "$scratch/$target.log" || echo '? runs'))"
done
