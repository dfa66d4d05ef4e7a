"""When and on what machine a study page's figures were measured: recorded on each suite's parent run, read back.

A study suite's parent run gets `machine.*` tags (cores, CPU model, RAM, OS, Python, Spark, Java) and the code
revision when it opens; the page reads them back with the runs' own start and end times, so a page says where its
figures come from without anyone typing it. Suites recorded before these tags existed still give their dates and
the Spark version their runs logged (`spark.version`).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from mlflow.tracking import MlflowClient

from jobs.recording.machine import describe_machine

# Each Spark run of a study suite takes its workload's duration plus this: a fresh Python process, Spark's start, the
# warm-up batch, draining what is left when the schedule ends, recording and stop. Measured on 2026-11-25 on the
# 2-core development machine (AMD EPYC, 23.5 GiB RAM, Debian 12, Spark 4.2.0) with
# `python -m studies.reproduction --run ds2-three-steps` (3 runs of 60 s): the suite took 470 s, so
# (470 - 3 x 60) / 3 = 97 s per run. Other jobs shared the machine then (load average 6-12), so the job fell behind and
# drained; on a quiet machine expect less (the demo's 3 runs of 60 s take about 5 min: ~40 s per run). The pages show
# what each suite really took next to this estimate.
RUN_OVERHEAD_S = 95.0


@dataclass(frozen=True)
class SuiteProvenance:
    """One suite's parent run: when it ran, for how long, and on what."""
    run_id: str
    start_ms: int
    end_ms: int | None
    machine: str  # one line: cores, CPU, RAM, OS, Python, Spark, Java ("not recorded" where a piece is missing)
    revision: str | None
    load: str | None = None  # the machine's 1-minute load average when the suite started (other jobs running?)

    @property
    def date(self) -> str:
        return day(self.start_ms)

    @property
    def wall_s(self) -> float | None:
        return (self.end_ms - self.start_ms) / 1000 if self.end_ms else None


def day(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d")


def suite_provenance(client: MlflowClient, parent_run_id: str) -> SuiteProvenance:
    parent = client.get_run(parent_run_id)
    tags = parent.data.tags
    spark_param = None
    if "machine.spark" not in tags:  # an older suite: its child runs logged the Spark version they ran on
        children = client.search_runs([parent.info.experiment_id], max_results=1,
                                      filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'")
        spark_param = children[0].data.params.get("spark.version") if children else None
    return SuiteProvenance(parent_run_id, parent.info.start_time, parent.info.end_time,
                           describe_machine(tags, spark_param), tags.get("code.revision"),
                           tags.get("machine.load_1min"))


def minutes(seconds: float) -> str:
    """'45 min', '2.4 h'."""
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def measured_on(suites: dict[str, list[SuiteProvenance]]) -> list[str]:
    """Markdown lines: each distinct machine with what was measured on it, and when.
    `suites` maps a row (claim, setting) to the suites its figures come from."""
    by_machine: dict[str, list[str]] = {}
    for row, provenances in suites.items():
        for p in provenances:
            load = f", load average {p.load} at start" if p.load else ""
            code = f", code {p.revision[:12]}" if p.revision else ""
            by_machine.setdefault(p.machine, []).append(f"{row} ({p.date}, suite `{p.run_id[:8]}`{load}{code})")
    return [f"- {machine}: {'; '.join(dict.fromkeys(rows))}" for machine, rows in by_machine.items()]


def date_span(suites: dict[str, list[SuiteProvenance]]) -> str:
    days = sorted({p.date for ps in suites.values() for p in ps})
    if not days:
        return "nothing measured yet"
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
