"""All runtime settings, read once from ``PERFDASH_*`` environment variables.

The defaults are the embedded setup: SQLite and a filesystem Celery broker under
``./var``, so `perfdash serve` needs no server. Production sets ``DATABASE_URL`` to
PostgreSQL and ``BROKER_URL`` to Redis.
"""

import os
from functools import lru_cache
from ipaddress import IPv4Network, IPv6Network
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

_LOOPBACK: tuple[IPv4Network | IPv6Network, ...] = (
    IPv4Network("127.0.0.0/8"),
    IPv6Network("::1/128"),
)


class Settings(BaseSettings):
    """perfdash settings; every field is the env var ``PERFDASH_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="PERFDASH_", extra="ignore")

    data_dir: Path = Field(default=Path("var"), description="Root for the embedded defaults.")
    database_url: str = Field(
        default="", description="SQLAlchemy URL; empty means sqlite:///<DATA_DIR>/perfdash.db."
    )
    broker_url: str = Field(
        default="", description="Celery broker; empty means the serverless filesystem:// transport."
    )
    storage_dir: Path | None = Field(
        default=None, description="Blob store; default <DATA_DIR>/blobs."
    )
    max_upload_bytes: int = Field(default=2 * 1024**3, gt=0, description="Largest accepted upload.")
    max_decompressed_bytes: int = Field(
        default=8 * 1024**3, gt=0, description="Largest decompressed trace a worker will parse."
    )
    archive_scratch_bytes: int = Field(
        default=2 * 1024**3,
        gt=0,
        description="Disk an uploaded archive's extracted files may take in the worker's "
        "temporary directory (TMPDIR), per ingest; removed when the ingest ends.",
    )
    api_url: str = Field(
        default="",
        description="Base URL the dashboard uses to reach the API; empty means this server.",
    )
    ingest_time_limit_s: int = Field(
        default=3600, gt=0, description="Hard time limit of an ingest task."
    )
    serve_worker_concurrency: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="Worker processes of the Celery worker `perfdash serve` starts; unset "
        "means one per CPU core, so uploads ingest side by side.",
    )
    access_log: bool = Field(
        default=False,
        description="Log a line per HTTP request on the console (uvicorn's access log and the "
        "dashboard's calls to the API).",
    )
    seed_samples: bool = Field(
        default=True, description="Load sample traces into an empty database."
    )
    requeue_after_s: int = Field(
        default=300,
        gt=0,
        description="A trace still queued after this long is re-enqueued by the sweeper "
        "(its first enqueue may have met a broker that was down).",
    )
    sweep_interval_s: int = Field(
        default=60, gt=0, description="How often each worker runs the re-enqueue sweeper."
    )
    claim_grace_s: int = Field(
        default=30,
        gt=0,
        description="The sweeper re-sends a `processing` trace this long after its worker's "
        "claim lapsed (the hard time limit), so the killed attempt has rolled back first.",
    )
    orphan_blob_after_s: int = Field(
        default=3600,
        gt=0,
        description="The sweeper removes a partial upload file (`.upload-*`) not written to "
        "for this long, and a stored blob no trace names that is this old (an API killed "
        "mid-upload). Keep it above the longest pause of a live upload.",
    )
    max_ingest_attempts: int = Field(
        default=3,
        gt=0,
        description="Ingest attempts a trace gets before a dying worker marks it failed.",
    )
    broker_visibility_timeout_s: int | None = Field(
        default=None,
        gt=0,
        description="Redis redelivers an unacknowledged task after this; "
        "empty means twice INGEST_TIME_LIMIT_S.",
    )
    auth: Literal["off", "password", "proxy"] = Field(
        default="off",
        description="off: pages, trace uploads and benchmark runs are anonymous (fit for "
        "loopback only); password: people log in with a perfdash user; proxy: trust a "
        "reverse proxy's user header (PROXY_USER_HEADER) from TRUSTED_PROXIES.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host names (JSON list) `serve` answers to; empty means localhost, "
        '127.0.0.1, ::1 and the --host given; `["*"]` answers any (DNS-rebinding guard).',
    )
    allow_anonymous: bool = Field(
        default=False,
        description="Allow `serve --host` beyond loopback with auth off (logs a warning).",
    )
    proxy_user_header: str = Field(
        default="X-Forwarded-User",
        min_length=1,
        description="With AUTH=proxy, the header that names the signed-in user.",
    )
    trusted_proxies: list[IPv4Network | IPv6Network] | None = Field(
        default=None,
        description="Reverse proxies (CIDR, JSON list) whose PROXY_USER_HEADER and "
        "X-Forwarded-For are believed; from any other peer both are ignored. Unset: the user "
        "header is believed from loopback and X-Forwarded-For from nobody, since a client "
        "on loopback could otherwise choose the address the sign-in throttle counts.",
    )
    proxy_default_role: Literal["viewer", "uploader", "admin"] = Field(
        default="viewer", description="Role of a user first seen in the proxy's header."
    )
    session_ttl_s: int = Field(
        default=12 * 3600, gt=0, description="A login session ends this long after sign-in."
    )
    cookie_secure: bool = Field(
        default=True,
        description="Mark session cookies Secure: browsers then send them over HTTPS only "
        "(and to http://127.0.0.1 or localhost, which Chromium and Firefox treat as secure).",
    )
    scrypt_n: int = Field(
        default=2**17,
        ge=2,
        description="scrypt cost N for new password hashes (r=8, p=1; OWASP's minimum). "
        "Each hash needs 128 * N * 8 bytes of memory.",
    )
    max_json_bytes: int = Field(
        default=16 * 1024**2,
        gt=0,
        description="Largest request body that is not a trace upload, on the API and the "
        "pages (Dash callbacks) alike.",
    )
    metric_min_year: int = Field(
        default=2000,
        ge=1,
        le=9999,
        description="Earliest year a pushed metric run may carry; older timestamps get 422, "
        "and reads skip stored runs outside the window.",
    )
    metric_max_future_s: int = Field(
        default=86400,
        ge=0,
        description="How far past now (seconds) a pushed metric run's timestamp may be.",
    )
    token_rate_per_s: float = Field(
        default=50.0, gt=0, description="Sustained requests per second per API token."
    )
    token_rate_burst: int = Field(
        default=500, gt=0, description="Requests an idle API token may send at once."
    )
    outbox_resend_after_s: int = Field(
        default=30,
        gt=0,
        description="An outbox message (a benchmark run's or a webhook delivery's task) not "
        "sent this long after it was written is sent by the workers' sweeper.",
    )
    webhook_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=45,
        description="Total deadline of one webhook delivery attempt: connect, send and "
        "response together; a receiver still talking at the deadline is cut off.",
    )
    webhook_allow_private: bool = Field(
        default=False,
        description="Let webhooks target loopback, private (RFC 1918, fc00::/7) and "
        "carrier-grade NAT addresses, for on-premise receivers. Link-local addresses "
        "(169.254.0.0/16, the cloud metadata service) stay refused.",
    )
    nsys_path: Path | None = Field(
        default=None,
        description="Nsight Systems `nsys` on the worker: .nsys-rep uploads are exported to "
        "sqlite with it; unset means they fail with the `nsys export` command to run.",
    )
    ncu_path: Path | None = Field(
        default=None,
        description="Nsight Compute `ncu` on the worker: .ncu-rep uploads are read through "
        "`ncu --import --csv --page raw`; unset means they fail with that command.",
    )
    bench_min_clock_fraction: float = Field(
        default=0.9,
        gt=0,
        le=1,
        description="A benchmark run is flagged `throttled` (`low_clock`) when the median SM "
        "clock through its timed loops is below this fraction of the max (or locked) clock.",
    )
    bench_throttle_min_samples: int = Field(
        default=5,
        ge=1,
        le=10_000,
        description="A benchmark run with fewer NVML samples through its timed loops is "
        "`unjudged` for clocks-event reasons: too short to tell a cap from a warm-up.",
    )
    bench_throttle_min_share: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="A clocks-event reason flags a run `throttled` only when its evidence "
        "(power near the limit, temperature near slowdown) holds in this share of samples.",
    )
    bench_aa_extra_runs: int = Field(
        default=5,
        ge=0,
        le=50,
        description="An A/A batch (`--repeat N`) queues up to this many runs beyond N to "
        "replace flagged ones, so that N unflagged runs exist; past it the batch stops short.",
    )
    # SQL over a trace (issue #18, backend/services/query).
    query_timeout_s: float = Field(
        default=10.0, gt=0, le=3600, description="Wall-clock limit of one SQL query."
    )
    query_memory_limit: str = Field(
        default="1GB",
        pattern=r"^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$",
        description="DuckDB memory limit of one SQL query (nothing spills to disk); its "
        "process is capped at its start-up size plus this plus 512 MB.",
    )
    query_max_rows: int = Field(
        default=100_000, ge=1, le=1_000_000, description="Most rows one SQL query returns."
    )
    query_max_answer_bytes: int = Field(
        default=32 << 20,
        ge=1024,
        description="Most bytes of rows (as JSON) one SQL query answers; the rows are cut in "
        "the query's own process, and the answer says so (`truncated_by: bytes`).",
    )
    query_threads: int = Field(default=2, ge=1, description="DuckDB threads of one SQL query.")
    query_concurrency: int = Field(
        default=2,
        ge=1,
        description="SQL queries one API process runs at once; more get 429.",
    )

    @field_validator("database_url")
    @classmethod
    def _known_driver(cls, value: str) -> str:
        if value and not value.startswith(("sqlite", "postgresql")):
            raise ValueError("DATABASE_URL must be sqlite:///... or postgresql+psycopg://...")
        if value.startswith("postgresql://"):
            return "postgresql+psycopg://" + value.removeprefix("postgresql://")
        return value

    @field_validator("scrypt_n")
    @classmethod
    def _power_of_two(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError("SCRYPT_N must be a power of two")
        return value

    @property
    def proxy_header_peers(self) -> list[IPv4Network | IPv6Network]:
        """Peers whose PROXY_USER_HEADER is believed: TRUSTED_PROXIES, loopback if unset."""
        return list(_LOOPBACK) if self.trusted_proxies is None else self.trusted_proxies

    @property
    def forwarded_for_peers(self) -> list[IPv4Network | IPv6Network]:
        """Peers whose X-Forwarded-For is believed: only proxies listed in TRUSTED_PROXIES."""
        return self.trusted_proxies or []

    @property
    def resolved_database_url(self) -> str:
        """The database URL, with the embedded default filled in."""
        return self.database_url or f"sqlite:///{(self.data_dir / 'perfdash.db').resolve()}"

    @property
    def resolved_broker_url(self) -> str:
        """The broker URL, with the embedded default filled in."""
        return self.broker_url or "filesystem://"

    @property
    def visibility_timeout_s(self) -> int:
        """Redis redelivery delay, kept above the ingest time limit by default."""
        return self.broker_visibility_timeout_s or self.ingest_time_limit_s * 2

    @property
    def embedded_worker_processes(self) -> int:
        """`SERVE_WORKER_CONCURRENCY`, or the machine's CPU cores when it is unset."""
        return self.serve_worker_concurrency or os.cpu_count() or 1

    @property
    def broker_dir(self) -> Path:
        """Folder the filesystem transport exchanges messages through."""
        return (self.data_dir / "broker").resolve()

    @property
    def blob_dir(self) -> Path:
        """Where uploaded bytes are stored, by sha256."""
        return (self.storage_dir or self.data_dir / "blobs").resolve()


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings; tests call ``get_settings.cache_clear()`` to re-read."""
    return Settings()
