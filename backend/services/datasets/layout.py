"""Where a trace's columnar dataset lives in the blob store, and its Arrow schema.

A dataset is a folder `<STORAGE_DIR>/datasets/<trace_id>/<name>/` holding `events.parquet`
and the timeline's level-of-detail index (`blocks.parquet`, `gaps.parquet`), and, for a
source with flow events of its own, `flows.parquet`; the analyses derived from the events
(`backend.services.analysis.derive`) sit beside them as `<table>-<part>.parquet`, one file
per table and events part, with `analyses-<part>.json` written last for each part;
`name` is `v<parser version>-<attempt>`, so a re-ingest writes beside the dataset readers
use and the trace row's `dataset` column moves to it only once it is complete. An ingest
writes into `.tmp-<name>/` and renames it: a killed ingest leaves a temporary folder that
no reader can see, which the sweeper removes (`sweep.py`).

Public surface: `DATASETS`, `EVENTS_FILE`, `BLOCKS_FILE`, `GAPS_FILE`, `FLOWS_FILE`,
`MEMORY_SNAPSHOT_FILE`, `FLOW_SCHEMA`,
`TEMP_PREFIX`, `ANALYSES_VERSION`, `ANALYSIS_TABLES`, `analysis_file`, `analysis_glob`,
`analyses_manifest`, `analyses_manifests`,
`EVENT_SCHEMA`, `BLOCK_SCHEMA`, `MIX_COLUMNS`, `GAP_SCHEMA`, `TABLES`, `dataset_dir`,
`trace_datasets_dir`.
"""

from pathlib import Path

import pyarrow as pa

DATASETS = "datasets"
EVENTS_FILE = "events.parquet"
BLOCKS_FILE = "blocks.parquet"
GAPS_FILE = "gaps.parquet"
# The source's own flow events (`ingest.events.Flows`; Kineto's `fwdbwd`), in datasets
# written since parser version 3; a dataset without the file has no source flows.
FLOWS_FILE = "flows.parquet"
# The memory snapshot tab's data (`ingest.memsnap.build_views`), only in a dataset whose
# trace is, or came with, a PyTorch memory snapshot.
MEMORY_SNAPSHOT_FILE = "memory_snapshot.json"
TEMP_PREFIX = ".tmp-"

# One row per stored event. `id` numbers a trace's events from 1 in the order the parser
# produced them (the timeline index and event detail refer to it); times are integer ns.
EVENT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("dur_ns", pa.int64(), nullable=False),
        pa.field("rank", pa.int32()),
        pa.field("device", pa.int32()),
        pa.field("stream", pa.int64()),
        pa.field("pid", pa.int64()),
        pa.field("tid", pa.int64()),
        pa.field("correlation", pa.int64()),
        pa.field("args", pa.string()),  # JSON text of the kept attributes, or null
    ]
)

# The timeline pyramid (`backend.services.timeline.pyramid`): per lane and level, the lane's
# busy intervals merged across gaps shorter than the level's width. The last four columns
# (the block's summed event durations by category, on GPU and device lanes; 0 elsewhere)
# came later: datasets written before them lack them, and the reader adds them as 0.
BLOCK_SCHEMA = pa.schema(
    [
        pa.field("level", pa.int16(), nullable=False),
        pa.field("lane", pa.int32(), nullable=False),
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("end_ns", pa.int64(), nullable=False),
        pa.field("events", pa.int64(), nullable=False),
        pa.field("children", pa.int64(), nullable=False),
        pa.field("busy_ns", pa.int64(), nullable=False),
        pa.field("top_name", pa.string(), nullable=False),
        pa.field("compute_ns", pa.int64(), nullable=False),
        pa.field("communication_ns", pa.int64(), nullable=False),
        pa.field("memcpy_ns", pa.int64(), nullable=False),
        pa.field("memset_ns", pa.int64(), nullable=False),
    ]
)
MIX_COLUMNS = ("compute_ns", "communication_ns", "memcpy_ns", "memset_ns")
# Idle gaps on GPU lanes, with what the CPU did meanwhile (`backend.services.timeline.gaps`).
GAP_SCHEMA = pa.schema(
    [
        pa.field("lane", pa.int32(), nullable=False),
        pa.field("start_ns", pa.int64(), nullable=False),
        pa.field("dur_ns", pa.int64(), nullable=False),
        pa.field("cause", pa.string(), nullable=False),
        pa.field("next_event_id", pa.int64()),
        pa.field("launch_event_id", pa.int64()),
        pa.field("cpu_runtime_ns", pa.int64(), nullable=False),
        pa.field("cpu_sync_ns", pa.int64(), nullable=False),
    ]
)
# One row per flow point. `event_id` is the stored event the point binds to as Perfetto
# binds it (the innermost event around `ts_ns` on its track; for an `f` without
# `enclosing`, the next event to start there), null where none does.
FLOW_SCHEMA = pa.schema(
    [
        pa.field("flow_id", pa.int64(), nullable=False),
        pa.field("cat", pa.string(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("phase", pa.string(), nullable=False),
        pa.field("ts_ns", pa.int64(), nullable=False),
        pa.field("rank", pa.int32()),
        pa.field("pid", pa.int64()),
        pa.field("tid", pa.int64()),
        pa.field("enclosing", pa.bool_(), nullable=False),
        pa.field("event_id", pa.int64()),
    ]
)
# The analyses derived from each events part (`backend.services.analysis.derive`): small
# tables `<table>-<part>.parquet`, read together by the glob `<table>-*.parquet`; a part's
# manifest `analyses-<part>.json` (its version and timing) is written after its tables, so
# a folder with the manifests of every part has all their tables. A dataset whose manifests
# are missing or of an older version is derived again on first read.
ANALYSES_VERSION = 3  # 2: the GPU, rank and collective tables; 3: memory by op
ANALYSIS_TABLES = (
    "operators",
    "op_kernels",
    "op_call_stacks",
    "stack_tree",
    "rank_splits",
    "gpu_segments",
    "gpu_devices",
    "comm_kernels",
    "memory_ops",
    "memory_peak",
    "memory_devices",
)
_MANIFEST = "analyses-{part}.json"


def analysis_file(folder: Path, table: str, part: str) -> Path:
    """One part's file of one derived table."""
    return folder / f"{table}-{part}.parquet"


def analysis_glob(folder: Path, table: str) -> str:
    """The glob that reads a derived table over every part."""
    return str(folder / f"{table}-*.parquet")


def analyses_manifest(folder: Path, part: str) -> Path:
    """The file that marks a part's derived tables complete."""
    return folder / _MANIFEST.format(part=part)


def analyses_manifests(folder: Path) -> list[Path]:
    """Every part's manifest in a dataset folder."""
    return sorted(folder.glob(_MANIFEST.format(part="*")))


# SQL placeholders (`{events}`...) and the file each reads.
TABLES = {"events": EVENTS_FILE, "blocks": BLOCKS_FILE, "gaps": GAPS_FILE, "flows": FLOWS_FILE}


def trace_datasets_dir(blob_dir: Path, trace_id: str) -> Path:
    """The folder holding every dataset (and temporary attempt) of one trace."""
    return blob_dir / DATASETS / trace_id


def dataset_dir(blob_dir: Path, trace_id: str, name: str) -> Path:
    """The folder of one complete dataset."""
    return trace_datasets_dir(blob_dir, trace_id) / name
