#!/usr/bin/env bash
# Make the Nsight Systems and Nsight Compute fixtures on the GPU machine (../shared/GPU.md).
#
#   bash tests/data/make_gpu_fixtures.sh OUTDIR [train_step] [copies] [ncu] [nccl] [nvtx_steps]
#
# With no names it makes train_step, copies and ncu (one GPU); nccl needs two GPUs;
# nvtx_steps (one GPU) also writes nsys/nvtx_steps.steps.json, the step times it measured.
# Needs Debian's libdw1/libelf1 unpacked under .libs/x (GPU.md step 1) for nsys's importer.
# Writes OUTDIR/fixtures.tar.gz (nsys/ and ncu/ folders, ready to unpack into tests/data/) and
# OUTDIR/log.txt (tool versions, GPU, file magic). The nsys exports have TARGET_INFO_SYSTEM_ENV,
# the captured environment variables in META_DATA_CAPTURE and the environment blocks interned
# in StringIds emptied, then VACUUM.
set -uo pipefail
OUT=${1:?usage: make_gpu_fixtures.sh OUTDIR [train_step] [copies] [ncu] [nccl]}
shift
WANT=" ${*:-train_step copies ncu} "
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
mkdir -p "$WORK/nsys" "$WORK/ncu"
LOG="$OUT/log.txt"
export LD_LIBRARY_PATH=$PWD/.libs/x/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 LC_ALL=C
NS=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
QI=/opt/nvidia/nsight-compute/2025.3.1/host/linux-desktop-glibc_2_11_3-x64/QdstrmImporter
NCU=/usr/local/cuda/bin/ncu

{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  $NS --version; $NCU --version | tail -1
} >"$LOG" 2>&1

scrub() {  # the environment of the GPU machine must not travel in a committed file
  python3 - "$1" <<'EOF'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
names = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
if "TARGET_INFO_SYSTEM_ENV" in names:
    con.execute("DELETE FROM TARGET_INFO_SYSTEM_ENV")
if "META_DATA_CAPTURE" in names:
    con.execute("DELETE FROM META_DATA_CAPTURE WHERE name LIKE '%ENVIRONMENT%'")
# Whole environment blocks (NUL-separated NAME=value lists) are interned as strings too.
con.execute("UPDATE StringIds SET value = '' WHERE instr(value, char(0)) > 0 AND instr(value, '=') > 0")
con.commit()
con.execute("VACUUM")
con.close()
EOF
}

nsys_fixture() {  # $1 = name, $2 = extra nsys profile options, rest = python3 arguments
  local name=$1 opts=$2; shift 2
  echo "== nsys $name" >>"$LOG"
  # shellcheck disable=SC2086
  $NS profile -t cuda,nvtx -s none --cpuctxsw=none $opts -o "$WORK/$name" \
    --force-overwrite true python3 "$@" >>"$LOG" 2>&1
  # nsys imports the .qdstrm itself when it finds libdw; otherwise run the importer.
  [ -f "$WORK/$name.nsys-rep" ] || $QI -i "$WORK/$name.qdstrm" >>"$LOG" 2>&1
  head -c 48 "$WORK/$name.nsys-rep" | od -c | head -3 >>"$LOG"
  $NS export --type sqlite -o "$WORK/nsys/$name.sqlite" "$WORK/$name.nsys-rep" >>"$LOG" 2>&1
  $NS stats --report cuda_gpu_kern_sum,cuda_gpu_mem_size_sum,cuda_api_sum,nvtx_sum \
    --format csv -o "$WORK/nsys/$name" "$WORK/$name.nsys-rep" >>"$LOG" 2>&1
  scrub "$WORK/nsys/$name.sqlite" >>"$LOG" 2>&1
}

want() { [[ $WANT == *" $1 "* ]]; }
want train_step && nsys_fixture train_step --cuda-graph-trace=node "$HERE/make_nsys_train_step.py"
want copies && nsys_fixture copies "" "$HERE/make_nsys_copies.py"
want nvtx_steps && nsys_fixture nvtx_steps "" "$HERE/make_nsys_nvtx_steps.py" \
  "$WORK/nsys/nvtx_steps.steps.json"
want nccl && nsys_fixture nccl_2gpu "" -m torch.distributed.run --nproc_per_node 2 \
  "$HERE/make_nsys_nccl.py"

if want ncu; then
# ncu: the roofline sections, occupancy and launch statistics, plus raw SASS/tensor/byte counts.
$NCU --list-sections >"$WORK/sections.txt" 2>>"$LOG"
SECTIONS=()
for s in SpeedOfLight SpeedOfLight_RooflineChart SpeedOfLight_HierarchicalSingleRooflineChart \
         SpeedOfLight_HierarchicalHalfRooflineChart SpeedOfLight_HierarchicalDoubleRooflineChart \
         SpeedOfLight_HierarchicalTensorRooflineChart Occupancy LaunchStats; do
  grep -qw "$s" "$WORK/sections.txt" && SECTIONS+=(--section "$s")
done
METRICS=$(printf '%s,' sm__sass_thread_inst_executed_op_{fadd,fmul,ffma,dadd,dmul,dfma,hadd,hmul,hfma}_pred_on.sum \
  dram__bytes.sum dram__bytes_read.sum dram__bytes_write.sum lts__t_bytes.sum l1tex__t_bytes.sum \
  sm__ops_path_tensor_src_bf16_dst_fp32.sum)
NCU_OPTS=(--clock-control none --profile-from-start off "${SECTIONS[@]}" --metrics "${METRICS%,}")
echo "== ncu ${NCU_OPTS[*]}" >>"$LOG"
$NCU "${NCU_OPTS[@]}" --csv --page raw python3 "$HERE/make_ncu_kernels.py" \
  >"$WORK/ncu/gemm_elementwise_raw.csv" 2>&1
$NCU "${NCU_OPTS[@]}" -o "$WORK/gemm" -f python3 "$HERE/make_ncu_kernels.py" >>"$LOG" 2>&1
head -c 48 "$WORK/gemm.ncu-rep" | od -c | head -3 >>"$LOG"
$NCU --import "$WORK/gemm.ncu-rep" --csv --page details >"$WORK/ncu/gemm_elementwise_details.csv" 2>>"$LOG"
$NCU --import "$WORK/gemm.ncu-rep" --csv --print-summary per-kernel \
  >"$WORK/ncu/gemm_elementwise_summary.csv" 2>>"$LOG"
fi

ls -la "$WORK/nsys" "$WORK/ncu" >>"$LOG"
tar -C "$WORK" -czf "$OUT/fixtures.tar.gz" nsys ncu
echo done >>"$LOG"
