#!/usr/bin/env bash
# What the device call ran for issue 9's proof (see docs/BENCHMARKS.md). Needs the wheels
# in .whl/ (CPython 3.12 manylinux) and writes its files to $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PERFDASH_DATA_DIR=/tmp/pd
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
work=/tmp/proof && mkdir -p $work
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv > $work/nvidia_smi.csv
python3 perf/bench_proof/run_proof.py ${SPECS:-perf/bench_proof/h200.yaml} $work > $work/proof.log 2>&1
tail -30 $work/proof.log
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  python3 -m workers.bench.workloads.allreduce --sizes 1M 64M 1G --iters 20 \
    > $OUT/allreduce.json 2> $work/allreduce.err
  tail -c 600 $OUT/allreduce.json
fi
for f in proof.json runs.json train_step.pt.trace.json.gz; do cp $work/$f $OUT/ 2>/dev/null; done
gzip -c $work/perfdash.db > $OUT/perfdash.db.gz
tar czf $OUT/logs.tgz -C $work nvidia_smi.csv proof.log serve.log worker.log \
  $(cd $work && ls allreduce.err 2>/dev/null)
ls -la $OUT
