#!/usr/bin/env bash
# The GPU check, in one go (about 5 minutes on one GPU): the op sweep and layer parity on the
# GPU (tests/gpu), then the training steps against PyTorch CUDA (benchmarks/gpu.py). Results go
# to $OUT (the device runner's output folder) or benchmarks/results.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-benchmarks/results}"
mkdir -p "$out"
python3 -c "import buildingai as b; print('cuda available:', b.cuda_is_available())" | tee "$out/gpu_check.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >> "$out/gpu_check.txt" 2>&1 || true
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tail -40 | tee -a "$out/gpu_check.txt"
status=${PIPESTATUS[0]}
timeout 120 python3 -m benchmarks.gpu --out "$out" 2>&1 | tee -a "$out/gpu_check.txt"
exit "$status"
