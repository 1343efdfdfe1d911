"""Nsight Compute section data on kernel events (issue #21 §5), against the CSV itself.

The expected values are read here with the csv module (skipping ncu's ``==PROF==`` and
``==WARNING==`` lines), never through perfdash's parser.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from ingest import Event, parse_file
from ingest.parsers import _ncu_sections
from tests.ingest.nsys_files import CORPUS_H200, NCU

RULE_HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
    '"Metric Value","Rule Name","Rule Type","Rule Description","Estimated Speedup Type",'
    '"Estimated Speedup"'
)
IDS = '"0","9","python3","h","k0","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0"'


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The CSV's rows as dicts, from its header on: ncu's ==PROF==/==WARNING== lines and the
    program's own output come first."""
    lines = path.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(('"ID",', '"Process ID",')))
    return list(csv.DictReader(lines[start:]))


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def _events(path: Path) -> list[Event]:
    return list(parse_file(path).events)


@pytest.mark.parametrize("name", ["gemm_elementwise_details.csv", "h200_full_details.csv"])
def test_details_sections_match_the_csv_row_for_row(name: str) -> None:
    path = NCU / name
    metrics: dict[str, dict[str, list[tuple[str, str, str]]]] = defaultdict(dict)
    rules: dict[str, list[tuple[str, str, str, float | None]]] = defaultdict(list)
    for r in csv_rows(path):
        if r.get("Rule Name"):
            text = r.get("Estimated Speedup") or ""
            speedup = _num(text) if text else None
            rules[r["ID"]].append((r["Section Name"], r["Rule Name"], r["Rule Type"], speedup))
        else:
            section = metrics[r["ID"]].setdefault(r["Section Name"], [])
            section.append((r["Metric Name"], r["Metric Unit"], r["Metric Value"]))
    events = _events(path)
    assert [str(e.args["ncu id"]) for e in events if e.args] == sorted(metrics, key=int)
    for e in events:
        assert e.args is not None
        got = e.args["ncu_sections"]
        want = metrics[str(e.args["ncu id"])]
        got_metrics = {s["name"]: s["metrics"] for s in got if s["metrics"]}
        assert list(got_metrics) == list(want)
        for name, rows in want.items():
            assert [(m[0], m[1]) for m in got_metrics[name]] == [(a, b) for a, b, _ in rows]
            for (_, _, value), (_, _, text) in zip(got_metrics[name], rows, strict=True):
                if isinstance(value, float):
                    assert value == pytest.approx(_num(text))
                else:
                    assert value == text
        got_rules = [
            (r["section_id"], r["name"], r["type"], r["speedup"]) for s in got for r in s["rules"]
        ]
        assert got_rules == rules[str(e.args["ncu id"])]
    if name != "gemm_elementwise_details.csv":
        return
    # the occupancy rule with a speedup, as ncu's details page groups it
    occupancy = next(s for s in events[0].args["ncu_sections"] if s["name"] == "Occupancy")  # type: ignore[index]
    assert occupancy["rules"][0]["name"] == "TheoreticalOccupancy"
    assert occupancy["rules"][0]["speedup"] == pytest.approx(81.25)


def _keep_from_raw(path: Path) -> list[dict[str, float]]:
    rows = csv_rows(path)
    units, launches = rows[0], rows[1:]
    scale = {"Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}  # LC_ALL=C raw pages: base units
    out = []
    for r in launches:
        kept = {}
        for name, text in r.items():
            if _ncu_sections.KEEP.match(name) and text not in ("", "n/a"):
                kept[name] = _num(text) * scale.get(units[name], 1.0)
        out.append(kept)
    return out


@pytest.mark.parametrize(
    "path",
    [
        NCU / "gemm_elementwise_raw.csv",
        NCU / "h200_full_raw.csv",
        CORPUS_H200 / "ncu2025.3_roofline_raw.csv",
    ],
)
def test_raw_page_keeps_the_section_metrics(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is not here")
    events = _events(path)
    want = _keep_from_raw(path)
    assert len(events) == len(want)
    for e, expected in zip(events, want, strict=True):
        assert e.args is not None and "ncu_sections" not in e.args
        assert e.args["ncu_metrics"] == pytest.approx(expected)
    keys = set(want[0])
    assert {"sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "sm__maximum_warps_per_active_cycle_pct",
            "launch__occupancy_limit_registers"} <= keys  # fmt: skip


def test_summary_page_sections_hold_the_averages() -> None:
    path = NCU / "gemm_elementwise_summary.csv"
    want: dict[str, dict[str, float]] = defaultdict(dict)
    for r in csv_rows(path):
        if r["Section Name"] == "Occupancy":
            want[r["Kernel Name"]][r["Metric Name"]] = _num(r["Average"])
    for e in _events(path):
        assert e.args is not None
        occ = next(s for s in e.args["ncu_sections"] if s["name"] == "Occupancy")
        assert {m[0]: m[2] for m in occ["metrics"]} == pytest.approx(want[e.name])


# Metric rows end with one empty cell, as ncu writes them (16 of the header's 20 fields).
def _parse_text(tmp_path: Path, *rows: str) -> tuple[list[Event], Any]:
    path = tmp_path / "k.csv"
    path.write_text("\n".join([RULE_HEADER, *rows]) + "\n")
    parsed = parse_file(path)
    return list(parsed.events), parsed.report


def test_truncated_and_malformed_section_rows(tmp_path: Path) -> None:
    events, report = _parse_text(
        tmp_path,
        f'{IDS},"GPU Speed Of Light Throughput","Duration","us","2.00",',
        f'{IDS},"Occupancy","Theoretical Occupancy","%","n/a",',  # no number: kept as text
        f'{IDS},"Occupancy","","","","AchievedOccupancy","OPT","Low occupancy."',  # cut short
        f'{IDS},"Occupancy","","","","Other","OPT","x","local","not-a-number"',
        f'{IDS},"Occupancy","Block Limit Warps"',  # too few fields: skipped
        f'{IDS},"Occupancy","","","","","","","",""',  # neither metric nor rule
    )
    (event,) = events
    assert event.args is not None
    sol, occ = event.args["ncu_sections"]
    assert sol["metrics"] == [["Duration", "us", 2.0]]
    assert occ["metrics"] == [["Theoretical Occupancy", "%", "n/a"]]
    assert [(r["name"], r["description"], r["speedup"]) for r in occ["rules"]] == [
        ("AchievedOccupancy", "Low occupancy.", None),
        ("Other", "x", None),
    ]
    assert "sm__maximum_warps_per_active_cycle_pct" not in event.args.get("ncu_metrics", {})
    assert report.skipped == 1


def test_rows_past_the_limit_are_dropped_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ncu_sections, "MAX_ROWS", 3)
    monkeypatch.setattr(_ncu_sections, "MAX_TEXT", 5)
    rows = [f'{IDS},"GPU Speed Of Light Throughput","Duration","us","2.00",']
    rows += [f'{IDS},"Occupancy","m{i}","","{i}",' for i in range(4)]
    rows[1] = f'{IDS},"Occupancy","","","","R","INF","a long description"'
    events, report = _parse_text(tmp_path, *rows)
    (event,) = events
    assert event.args is not None
    kept = event.args["ncu_sections"]
    assert sum(len(s["metrics"]) + len(s["rules"]) for s in kept) == 3
    assert kept[1]["rules"][0]["description"] == "a lon"
    assert any("2 section row(s) past the first 3" in w for w in report.warnings)
