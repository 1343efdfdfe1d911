#!/usr/bin/env bash
# Issue #21 fixtures on the GPU machine: torch traces, nsys CUDA-graph report, ncu full set.
#   bash tests/data/make_h200_analysis.sh OUTDIR
# Writes OUTDIR/fx21.tar.gz (torch/, nsys/, ncu/ ready to unpack into tests/data/) and OUTDIR/log.
# nsys's importer needs libdw.so.1; when it is missing a stub is built (every dw* symbol the
# importer imports, returning 0): with -s none the importer never calls it for real.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: make_h200_analysis.sh OUTDIR}
W=/tmp/fx21; mkdir -p $W/torch $W/nsys $W/ncu; LOG=$OUT/log; exec >>"$LOG" 2>&1
PY="python3 $HERE/make_h200_analysis.py"
export LC_ALL=C PYTHONUNBUFFERED=1
NS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
QI=/opt/nvidia/nsight-compute/2025.3.1/host/linux-desktop-glibc_2_11_3-x64/QdstrmImporter
NCU=/usr/local/cuda/bin/ncu
echo "== torch"; $PY ops $W/torch; $PY graph $W/torch; ls -la $W/torch
echo "== libdw"
if ldd $QI | grep -q 'libdw.so.1 => not found'; then
  S=/tmp/dwstub; mkdir -p $S; D=$(dirname $QI)
  for f in $QI $D/*.so*; do objdump -T "$f" 2>/dev/null; done |
    awk '/\*UND\*/ && $NF ~ /^dw/ && $(NF-1) ~ /ELFUTILS_0/ {v=$(NF-1); gsub(/[()]/, "", v); print v, $NF}' | sort -u >$S/syms
  awk '{print "int " $2 "(void){return 0;}"}' $S/syms >$S/s.c
  awk '{v[$1]=v[$1] $2 ";"} END {for (k in v) print k " { global: " v[k] " };"}' $S/syms >$S/v.map
  gcc -shared -fPIC -o $S/libdw.so.1 -Wl,-soname,libdw.so.1 -Wl,--version-script=$S/v.map $S/s.c
  export LD_LIBRARY_PATH=$S:${LD_LIBRARY_PATH:-}; wc -l $S/syms; ldd $QI | grep -i 'not found'
fi
echo "== nsys"; $NS --version
$NS profile -t cuda,nvtx -s none --cpuctxsw=none --cuda-graph-trace=node -o /tmp/cg \
  --force-overwrite true $PY graph-nsys
[ -f /tmp/cg.nsys-rep ] || $QI -i /tmp/cg.qdstrm
$NS export --type sqlite -o $W/nsys/cuda_graph.sqlite /tmp/cg.nsys-rep
$NS stats --help-reports >$W/nsys/cuda_graph_help_reports.txt 2>&1
for r in cuda_gpu_kern_sum nvtx_sum cuda_kern_exec_sum cuda_api_sum; do
  $NS stats --report $r --format csv -o $W/nsys/cuda_graph /tmp/cg.nsys-rep
done
python3 - $W/nsys/cuda_graph.sqlite <<'PYEOF'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
t = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
if "TARGET_INFO_SYSTEM_ENV" in t:
    con.execute("DELETE FROM TARGET_INFO_SYSTEM_ENV")
if "META_DATA_CAPTURE" in t:
    con.execute("DELETE FROM META_DATA_CAPTURE WHERE name LIKE '%ENVIRONMENT%'")
con.execute("UPDATE StringIds SET value = '' WHERE instr(value, char(0)) > 0 AND instr(value, '=') > 0")
con.commit(); con.execute("VACUUM"); con.close()
PYEOF
ls -la $W/nsys
echo "== ncu"; $NCU --version
O=(--set full --clock-control none --profile-from-start off --launch-count 3 --csv)
$NCU "${O[@]}" --page details $PY ncu >$W/ncu/h200_full_details.csv 2>&1
$NCU "${O[@]}" --page raw $PY ncu >$W/ncu/h200_full_raw.csv 2>&1
ls -la $W/ncu; head -c 600 $W/ncu/h200_full_details.csv
tar -C $W -czf $OUT/fx21.tar.gz torch nsys ncu; nvidia-smi --query-gpu=name,driver_version --format=csv
