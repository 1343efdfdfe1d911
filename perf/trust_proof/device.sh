#!/usr/bin/env bash
# Issue 37's GPU proof: `bash perf/trust_proof/device.sh` on the H200 (device call). Needs
# perfdash's packages unpacked for CPython 3.12 in site.tar.xz at the repo root (the device
# image has torch, numpy, pyarrow and nvidia-ml-py) and writes to $OUT: trust_proof.json
# (rows, expectations, PASS/FAIL), runs.json, perfdash.db.gz, nvidia_smi.csv.gz (nvidia-smi's
# own 100 ms log of clocks, power and event reasons: the independent record) and logs.tgz
# (serve, worker, the CLI's A/A output, nvidia-smi pmon beside the other processes).
set -u
mkdir -p /tmp/site && tar xJf site.tar.xz -C /tmp/site || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PERFDASH_DATA_DIR=/tmp/pd-trust
python3 -c "import pyarrow, numpy, torch, pynvml, fastapi, celery, dash, duckdb; pynvml.nvmlInit();
print('pyarrow', pyarrow.__version__, 'torch', torch.__version__, 'driver', pynvml.nvmlSystemGetDriverVersion())" || exit 1
work=/tmp/trust && mkdir -p $work
. perf/gpu_guard/nvidia_smi_log.sh $work/nvidia_smi.csv
timeout 540 python3 perf/trust_proof/run_trust_proof.py perf/trust_proof/specs.yaml $work > $work/proof.log 2>&1
echo "proof rc=$?"
kill $smi
tail -30 $work/proof.log
cp $work/trust_proof.json $work/runs.json $OUT/ 2>/dev/null
gzip -c $work/perfdash.db > $OUT/perfdash.db.gz
gzip -c $work/nvidia_smi.csv > $OUT/nvidia_smi.csv.gz
tar czf $OUT/logs.tgz -C $work proof.log serve.log worker.log aa_cli.txt $(cd $work && ls pmon_*.txt 2>/dev/null)
ls -la $OUT
