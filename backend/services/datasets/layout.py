"""Where a trace's columnar dataset lives in the blob store, and its Arrow schema.

A dataset is a folder `<STORAGE_DIR>/datasets/<trace_id>/<name>/` holding `events.parquet`;
`name` is `v<parser version>-<attempt>`, so a re-ingest writes beside the dataset readers
use and the trace row's `dataset` column moves to it only once it is complete. An ingest
writes into `.tmp-<name>/` and renames it: a killed ingest leaves a temporary folder that
no reader can see, which the sweeper removes (`sweep.py`).

Public surface: `DATASETS`, `EVENTS_FILE`, `TEMP_PREFIX`, `EVENT_SCHEMA`, `dataset_dir`,
`trace_datasets_dir`.
"""

from pathlib import Path

import pyarrow as pa

DATASETS = "datasets"
EVENTS_FILE = "events.parquet"
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


def trace_datasets_dir(blob_dir: Path, trace_id: str) -> Path:
    """The folder holding every dataset (and temporary attempt) of one trace."""
    return blob_dir / DATASETS / trace_id


def dataset_dir(blob_dir: Path, trace_id: str, name: str) -> Path:
    """The folder of one complete dataset."""
    return trace_datasets_dir(blob_dir, trace_id) / name
