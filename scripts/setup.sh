#!/usr/bin/env bash
# Installs everything kevo needs on a fresh Debian 12 machine (run as root, or with sudo
# available): the C build dependencies from Debian's packages, and Triton from PyPI in a
# virtual environment at $KEVO_VENV (default .venv in the source tree). The CUDA toolkit
# (NVRTC, headers) must already be on the machine: it is not a Debian 12 package we use.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs=(build-essential cmake pkg-config git liblua5.4-dev libcurl4-openssl-dev libcjson-dev
      libyaml-dev libsqlite3-dev libhiredis-dev redis-server clang-format lua-check python3
      python3-venv sqlite3)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null && [ ! -e /usr/local/cuda/include/nvrtc.h ]; then
  echo "setup: the CUDA toolkit (NVRTC and headers) is not installed; kevo needs it to build." >&2
  echo "setup: install the CUDA toolkit (12.x or 13.x) under /usr/local/cuda, then run again." >&2
  exit 1
fi
if [ -d /usr/local/cuda/bin ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi

venv="${KEVO_VENV:-.venv}"
if [ "${KEVO_SKIP_TRITON:-0}" != 1 ] && ! "$venv/bin/python3" -c 'import triton' >/dev/null 2>&1; then
  echo "setup: installing Triton into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python3" -m pip install -q --upgrade pip >/dev/null
  "$venv/bin/python3" -m pip install -q "triton==3.6.0"
fi
echo "setup: done"
