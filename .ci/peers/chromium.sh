#!/usr/bin/env bash
# Chromium and chromedriver for patchbay-orchestrator's web view test (tests/web.rs drives
# headless Chromium through chromedriver). Debian packages, so the two versions always match;
# installed system-wide with apt (as root, or through sudo when there is one). Idempotent.
set -euo pipefail

if command -v chromedriver >/dev/null 2>&1 \
  && { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; }; then
  echo "chromium peer already installed ($(chromedriver --version 2>/dev/null | head -n1))"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "chromium peer: not root and no sudo: install the chromium and chromium-driver packages yourself" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y chromium chromium-driver
echo "chromium peer installed: $(chromedriver --version | head -n1)"
