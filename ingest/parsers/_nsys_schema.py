"""Opening an Nsight Systems sqlite export and reading what describes it (FORMATS.md §2).

The exporter's schema changed between 2021 and 2025 (2.x ``EXPORT_META_DATA`` and no
``ENUM_*`` tables; 3.x ``META_DATA_EXPORT``, green contexts, ``CUDA_GRAPH_NODE_EVENTS``), and
tables exist only when a run recorded such events. So the reader asks sqlite which tables and
columns exist and builds its queries from that, instead of assuming one schema.

Never read here: ``TARGET_INFO_SYSTEM_ENV`` and ``META_DATA_CAPTURE``, which hold the
profiled machine's environment variables (sometimes secrets).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ingest.errors import ParseError, UnsupportedFormatError
from ingest.events import Device
from ingest.parsers._sqlite import MAX_VALUE_BYTES, open_upload

META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")  # schema 3.x, 2.x
KNOWN_SCHEMA_MAJORS = (2, 3)
LOCK_TIMEOUT_S = 2.0
_KEPT_META = {"EXPORT_PRODUCT_VERSION": "nsys_version", "EXPORT_SCHEMA_VERSION": "schema_version"}
# TARGET_INFO_GPU column -> Device.properties key (the roofline view reads peak_dram_bytes_per_s).
_GPU_PROPERTIES = {
    "busLocation": "bus_location",
    "chipName": "chip",
    "uuid": "uuid",
    "totalMemory": "total_memory_bytes",
    "memoryBandwidth": "peak_dram_bytes_per_s",  # bytes/s despite its column comment
    "clockRate": "sm_clock_hz",
    "smCount": "sm_count",
    "l2CacheSize": "l2_cache_bytes",
    "maxWarpsPerSm": "max_warps_per_sm",
    "maxShmemPerBlockOptin": "max_shared_memory_per_block_optin_bytes",
    "cuDevice": "cu_device",
}


def open_readonly(path: Path, source: str) -> sqlite3.Connection:
    """Open the export read-only, values capped (`ingest.parsers._sqlite.open_upload`), and
    check it is sqlite.

    Raises:
        ParseError: the file is not a readable sqlite database, or is locked.
    """
    try:
        conn = open_upload(path, timeout=LOCK_TIMEOUT_S)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.Error, UnicodeDecodeError) as e:  # corrupt TEXT is not UTF-8
        raise sqlite_error(e, source, "opening the database") from e
    return conn


def sqlite_error(error: Exception, source: str, where: str) -> ParseError:
    """A ParseError that says in plain words what sqlite's complaint means (through the
    sqlite3 module or ADBC's driver)."""
    text = str(error)
    if isinstance(error, UnicodeDecodeError):  # a TEXT value that corruption made non-UTF-8
        hint = "the sqlite file is truncated or corrupt"
    elif "too big" in text:
        hint = f"a value in the sqlite file is over the {MAX_VALUE_BYTES}-byte limit"
    elif "locked" in text or "busy" in text:
        hint = "the sqlite file is locked by another program (is nsys still writing it?)"
    elif "malformed" in text or "not a database" in text or "corrupt" in text:
        hint = "the sqlite file is truncated or corrupt"
    else:
        hint = "the sqlite file cannot be read"
    return ParseError(f"{hint}: sqlite said '{text}' while {where}", source=source)


# Tables read besides the activity tables (`_nsys_events.REQUIRED_COLUMNS`).
READ_TABLES = (
    "StringIds", *META_TABLES, "TARGET_INFO_SESSION_START_TIME", "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_DEVICE",
)  # fmt: skip


def tables(conn: sqlite3.Connection) -> set[str]:
    """Names of the tables in the export."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """Column names of one table (the name comes from sqlite_master, never from the user)."""
    return {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}


# An export without its metadata table (some 2021 exports) is still recognised by these.
CUPTI_TABLES = (
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
)  # fmt: skip
NO_METADATA = (
    "the export has no META_DATA_EXPORT or EXPORT_META_DATA table (recognised by its CUPTI "
    "tables and StringIds): nsys and schema versions are unknown"
)


def looks_like_export(present: set[str]) -> bool:
    """Whether the tables are an nsys export's: StringIds with a metadata or CUPTI table."""
    return "StringIds" in present and any(t in present for t in (*META_TABLES, *CUPTI_TABLES))


def check_export(present: set[str], source: str) -> str | None:
    """Return the metadata table's name (None: the export has none, see `NO_METADATA`), or
    explain why this is not an nsys export.

    Raises:
        UnsupportedFormatError: a required table is missing; the message names it.
    """
    meta = next((t for t in META_TABLES if t in present), None)
    if looks_like_export(present):
        return meta
    missing = [] if "StringIds" in present else ["StringIds"]
    if meta is None:
        missing.append(" or ".join((*META_TABLES, "a CUPTI_ACTIVITY_KIND_* table")))
    raise UnsupportedFormatError(
        f"{source}: a sqlite database but not an Nsight Systems export "
        f"(`nsys export --type sqlite`): missing table(s) {', '.join(missing)}"
    )


def read_metadata(conn: sqlite3.Connection, meta_table: str, source: str) -> dict[str, str]:
    """The exporter's product and schema version (whitelisted), checking the schema is known.

    Raises:
        UnsupportedFormatError: the schema's major version is not 2 or 3.
    """
    rows = conn.execute(f'SELECT name, value FROM "{meta_table}"')
    kept = {_KEPT_META[n]: str(v) for n, v in rows if n in _KEPT_META}
    version = kept.get("schema_version", "")
    major = version.split(".", 1)[0]
    if major.isdigit() and int(major) not in KNOWN_SCHEMA_MAJORS:
        raise UnsupportedFormatError(
            f"{source}: Nsight Systems export schema {version} is not one perfdash knows "
            f"(it reads schema 2.x and 3.x, nsys 2021 to 2025)"
        )
    return kept


def session_start_ns(conn: sqlite3.Connection, present: set[str]) -> int | None:
    """Wall-clock UTC ns of the session's time zero, when recorded."""
    if "TARGET_INFO_SESSION_START_TIME" not in present:
        return None
    if "utcEpochNs" not in columns(conn, "TARGET_INFO_SESSION_START_TIME"):
        return None
    row = conn.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
    return int(row[0]) if row and isinstance(row[0], int) else None


def read_devices(conn: sqlite3.Connection, present: set[str]) -> list[Device]:
    """GPUs by CUDA ordinal: ``TARGET_INFO_CUDA_DEVICE.cudaId`` when the export maps them,
    else ``TARGET_INFO_GPU.cuDevice`` (``id`` is not the ordinal: FORMATS.md §2.4)."""
    if "TARGET_INFO_GPU" not in present:
        return []
    cols = columns(conn, "TARGET_INFO_GPU")
    wanted = [
        c for c in ("id", "name", "computeMajor", "computeMinor", *_GPU_PROPERTIES) if c in cols
    ]
    ordinal = _cuda_ordinals(conn, present)
    devices: dict[int, Device] = {}
    for values in conn.execute(f"SELECT {', '.join(wanted)} FROM TARGET_INFO_GPU"):
        row = dict(zip(wanted, values, strict=True))
        gpu_id = row.get("id")
        if ordinal and gpu_id not in ordinal:
            continue  # a GPU of the node that the profiled processes did not use
        index = ordinal.get(gpu_id) if ordinal else row.get("cuDevice", gpu_id)
        if not isinstance(index, int) or index in devices:
            continue
        props = {key: row[col] for col, key in _GPU_PROPERTIES.items() if row.get(col) is not None}
        if isinstance(row.get("computeMajor"), int) and isinstance(row.get("computeMinor"), int):
            props["compute_capability"] = f"{row['computeMajor']}.{row['computeMinor']}"
        devices[index] = Device(index=index, name=str(row.get("name") or ""), properties=props)
    return [devices[i] for i in sorted(devices)]


def _cuda_ordinals(conn: sqlite3.Connection, present: set[str]) -> dict[object, int]:
    if "TARGET_INFO_CUDA_DEVICE" not in present:
        return {}
    if not {"gpuId", "cudaId"} <= columns(conn, "TARGET_INFO_CUDA_DEVICE"):
        return {}
    rows = conn.execute("SELECT gpuId, cudaId FROM TARGET_INFO_CUDA_DEVICE ORDER BY cudaId")
    return {gpu: cuda for gpu, cuda in rows if isinstance(cuda, int)}
