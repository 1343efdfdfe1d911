"""Metric series over runs: history reads, statistics, change points and regimes (pure maths below
the SLA rules), and one series for the series page.
"""

from backend.services.series.flags import check_flags, describe_flags, run_flags, suspect_flags
from backend.services.series.history import (
    SeriesRow,
    count_skipped,
    env_matches,
    in_window,
    point_stat,
    read_history,
    representative,
)
from backend.services.series.noise import NoiseBand
from backend.services.series.noise_reads import NoiseCensus, read_noise_band, series_band
from backend.services.series.reads import get_series
from backend.services.series.regimes import (
    MIN_POINTS,
    REGRESSION_ALPHA,
    Regime,
    find_regimes,
    open_regression,
    streak_start,
)
from backend.services.series.statistics import (
    mann_whitney_u,
    median,
    percentile,
    summarize,
    welch_t_test,
)
from backend.services.series.time_window import TimeWindow, parse_timestamp

__all__ = [
    "MIN_POINTS",
    "REGRESSION_ALPHA",
    "NoiseBand",
    "NoiseCensus",
    "Regime",
    "SeriesRow",
    "TimeWindow",
    "check_flags",
    "count_skipped",
    "describe_flags",
    "env_matches",
    "find_regimes",
    "get_series",
    "in_window",
    "mann_whitney_u",
    "median",
    "open_regression",
    "parse_timestamp",
    "percentile",
    "point_stat",
    "read_history",
    "read_noise_band",
    "representative",
    "run_flags",
    "series_band",
    "streak_start",
    "summarize",
    "suspect_flags",
    "welch_t_test",
]
