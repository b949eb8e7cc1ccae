#!/usr/bin/env bash
# Builds plax's wheels into .whl-tpu/ (ignored by git) for a TPU machine, which has no
# package index: benchmarks/tpu/run_on_chip.sh installs them there. Run from the
# repository root on an x86-64 Linux machine with Python 3.11.
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .whl-tpu && mkdir -p .whl-tpu
packages=(core stdlib runtime_cpp transforms sharding plugins/tpu)
[ -f pallas/pyproject.toml ] && packages+=(pallas)
for p in "${packages[@]}"; do
  python3 -m pip wheel -q --no-deps -w .whl-tpu "./$p"
done
ls -la .whl-tpu
