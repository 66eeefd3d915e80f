#!/usr/bin/env bash
# The GPU check, in one go (about 2 minutes on one GPU): the op sweep and layer parity on the
# GPU (tests/gpu), then the training steps against PyTorch CUDA (benchmarks/gpu.py). Results go
# to $OUT (the device runner's output folder) or benchmarks/results; then, on any machine,
# `python -m benchmarks.gpu --publish <that folder>/gpu-*.json` publishes them in
# docs/benchmarks.md.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-benchmarks/results}"
mkdir -p "$out"
python3 -c "import buildingai as b; print('cuda available:', b.cuda_is_available())" | tee "$out/gpu_check.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >> "$out/gpu_check.txt" 2>&1 || true
# the record sweeps are hundreds of small cases: spread them over 8 workers where xdist is there
workers=$(python3 -c "import xdist" 2>/dev/null && echo "-n 8")
timeout 240 python3 -m pytest -q -p no:cacheprovider $workers tests/gpu > "$out/gpu_tests.txt" 2>&1
status=$?
tail -40 "$out/gpu_tests.txt" | tee -a "$out/gpu_check.txt"
timeout 120 python3 -m benchmarks.gpu --out "$out" --tests "$out/gpu_tests.txt" 2>&1 \
    | tee -a "$out/gpu_check.txt"
exit "$status"
