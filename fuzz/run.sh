#!/usr/bin/env bash
# Run one fuzz target for a while: fuzz/run.sh <target> [seconds, default 600].
# New inputs go to fuzz/corpus/<target>/ (fuzz/seeds/<target>/ is read too when seed.sh made it);
# a crash is saved under fuzz/artifacts/<target>/. Needs nightly and cargo-fuzz.
set -euo pipefail
cd "$(dirname "$0")"
target=$1
seconds=${2:-600}
mkdir -p "corpus/$target"
dirs=("corpus/$target")
if [ -d "seeds/$target" ]; then dirs+=("seeds/$target"); fi
exec cargo +nightly fuzz run "$target" "${dirs[@]}" -- \
  -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
  -print_final_stats=1
