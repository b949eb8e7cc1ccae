#!/usr/bin/env bash
# Everything plax runs on a TPU chip, in one command (the machine is lent for minutes):
# install the wheels of benchmarks/tpu/build_wheels.sh beside the machine's JAX, run the
# on-chip tests (one process: one program at a time may hold the chip), then the
# plax-vs-JAX benchmarks. Logs go to $OUT (or ./tpu-out). Usage, from the repository
# root: bash benchmarks/tpu/run_on_chip.sh [tests] [bench] [profile] [pallas] [pgle] [pgle_probe] [eigh]
set -u
export PYTHONUNBUFFERED=1
out=${OUT:-tpu-out}; mkdir -p "$out"
parts=${*:-tests bench pallas pgle}
PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps \
  --no-compile --no-cache-dir --upgrade --target /tmp/site .whl-tpu/*.whl || exit 1
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/site
python3 - <<'PY' 2>&1 | tee "$out/environment.txt"
import glob, platform, plax, plax_tpu, jaxlib
print(platform.libc_ver(), "jaxlib", jaxlib.__version__, "chips seen:", plax_tpu.attached_chips())
print("pci:", len(glob.glob("/sys/bus/pci/devices/*")), "vfio:", glob.glob("/dev/vfio/*"),
      "accel:", glob.glob("/dev/accel*"))
print(plax.devices(), plax.devices()[0].device_kind)
PY
run() {  # name, command...: time it, keep its log, never stop the others
  local name=$1; shift
  local start=$SECONDS
  "$@" > "$out/$name.log" 2>&1; local rc=$?
  echo "== $name: exit $rc in $((SECONDS - start)) s"; tail -n 40 "$out/$name.log"
}
for part in $parts; do
  case $part in
    tests) PLAX_HYPOTHESIS_PROFILE=interactive run tests python3 -m pytest -p no:xdist -p no:cacheprovider -q -o addopts="" \
             tests/test_on_tpu.py ;;
    bench) run bench python3 benchmarks/tpu/bench_on_chip.py --rounds 2 ;;
    profile) run profile python3 benchmarks/tpu/profile_dispatch.py ;;
    pallas) [ -f benchmarks/tpu/pallas_on_chip.py ] && run pallas python3 benchmarks/tpu/pallas_on_chip.py ;;
    pgle) [ -f benchmarks/tpu/pgle_on_chip.py ] && run pgle python3 benchmarks/tpu/pgle_on_chip.py ;;
    pgle_probe) run pgle_probe python3 benchmarks/tpu/pgle_probe.py ;;
    eigh) run eigh python3 benchmarks/tpu/eigh_on_chip.py ;;
  esac
done
