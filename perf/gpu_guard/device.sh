#!/usr/bin/env bash
# Issue 22's GPU proof: `bash perf/gpu_guard/device.sh` on the H200 (device call). Needs the
# CPython 3.12 wheels in .whl/ (perfdash's deps and nvidia-ml-py) and writes to $OUT:
# guard_proof.json (flags, median SM clock and power, TFLOP/s per run, PASS/FAIL per
# expectation), runs.json, perfdash.db.gz (for the run page), nvidia_smi.csv (nvidia-smi's
# own 100 ms log of clocks, power and event reasons: the independent record), logs.tgz.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PERFDASH_DATA_DIR=/tmp/pd-guard
python3 -c "import pynvml; pynvml.nvmlInit(); print('nvml', pynvml.nvmlSystemGetDriverVersion())" \
  || { echo "pynvml missing or NVML will not start: add nvidia-ml-py to .whl/"; exit 1; }
work=/tmp/guard && mkdir -p $work
. perf/gpu_guard/nvidia_smi_log.sh $work/nvidia_smi.csv
python3 perf/gpu_guard/run_guard_proof.py perf/gpu_guard/specs.yaml $work > $work/proof.log 2>&1
kill $smi
tail -40 $work/proof.log
cp $work/guard_proof.json $work/runs.json $OUT/ 2>/dev/null
gzip -c $work/perfdash.db > $OUT/perfdash.db.gz
gzip -c $work/nvidia_smi.csv > $OUT/nvidia_smi.csv.gz
tar czf $OUT/logs.tgz -C $work proof.log serve.log worker.log
ls -la $OUT
