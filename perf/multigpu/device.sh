#!/usr/bin/env bash
# What the issue-11 device call runs on the 2x H200 machine. Needs the CPython 3.12 wheels in
# .whl/ (see perf/bench_proof/device.sh) and writes to $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PERFDASH_DATA_DIR=/tmp/pd-mg
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv > $OUT/nvidia_smi.csv
nvidia-smi topo -m > $OUT/topo.txt 2>&1
python3 perf/multigpu/run_allreduce.py $OUT > $OUT/run.log 2>&1
tail -40 $OUT/run.log
