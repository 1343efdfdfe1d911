"""Datasets: a trace's events as columns (Parquet in the blob store, read by DuckDB).

The SQL database keeps the small nouns; a trace's events live in its dataset, written once
per ingest and parser version, and read by every page, export and analysis that needs them.
"""

from backend.services.datasets.cleanup import remove_trace_datasets, sweep_datasets
from backend.services.datasets.flows import flow_table
from backend.services.datasets.layout import (
    ANALYSES_VERSION,
    ANALYSIS_TABLES,
    EVENT_SCHEMA,
    MIX_COLUMNS,
    TEMP_PREFIX,
    analyses_manifest,
    analyses_manifests,
    analysis_file,
    analysis_glob,
)
from backend.services.datasets.reader import (
    arrow_batches_of_events,
    arrow_of_file,
    batches_of_events,
    blocks_table,
    events_file,
    flows_file,
    memory_snapshot_file,
    query_events,
    query_file,
)
from backend.services.datasets.writer import DatasetWriter

__all__ = [
    "ANALYSES_VERSION",
    "ANALYSIS_TABLES",
    "EVENT_SCHEMA",
    "MIX_COLUMNS",
    "TEMP_PREFIX",
    "DatasetWriter",
    "analyses_manifest",
    "analyses_manifests",
    "analysis_file",
    "analysis_glob",
    "arrow_batches_of_events",
    "arrow_of_file",
    "batches_of_events",
    "blocks_table",
    "events_file",
    "flow_table",
    "flows_file",
    "memory_snapshot_file",
    "query_events",
    "query_file",
    "remove_trace_datasets",
    "sweep_datasets",
]
