"""The terminal table a suite ends with: rows grouped under their workload, the oracle named as such, every other
configuration as written; and the oracle's short label in the runs read back from MLflow."""
import pandas as pd

from analysis.runs import oracle_labelled
from analysis.table import format_table

ORACLE = "oracle:service_s={parse: 1.0e-05, enrich: 0.00015},selectivity={parse: 1.0},batch_overhead_s=0.21"


def _row(variant, controller, workload, cost):
    return {"variant": variant, "controller": controller, "workload": workload, "slo_latency_s": 5.0,
            "slo_target": 0.95, "latency_p50_s": 1.0, "latency_p95_s": 2.0, "latency_p99_s": 3.0,
            "slo_attainment": 1.0, "cost_slot_seconds": cost, "scaling_actions": 2, "records_in": 10,
            "records_out": 10, "records_lost": 0, "records_duplicated": 0}


def test_rows_are_grouped_under_their_workload_and_the_oracle_is_named_as_such():
    rows = [_row("ds2", "ds2", "step", 100), _row(ORACLE, "oracle", "ramp", 80), _row("threshold", "threshold",
                                                                                      "step", 120)]
    lines = format_table(rows).splitlines()
    assert lines[0] == "SLO: latency <= 5s for 95% of events"
    assert lines[3] == "workload step:" and lines[4].startswith("ds2 ") and lines[5].startswith("threshold ")
    assert lines[6] == "" and lines[7] == "workload ramp:" and lines[8].startswith("oracle ")
    assert max(len(line) for line in lines) < 130, "no row widened by the oracle's calibration"


def test_one_workload_needs_no_group_line():
    lines = format_table([_row("ds2", "ds2", "step", 100)]).splitlines()
    assert len(lines) == 4 and not any(line.startswith("workload") for line in lines)


def test_the_oracle_reads_oracle_unless_runs_of_several_calibrations_are_compared():
    runs = pd.DataFrame({"controller": ["ds2", "oracle", "oracle"], "config": ["ds2", ORACLE, ORACLE],
                         "config_id": ["a" * 16, "b" * 16, "b" * 16]})
    assert list(oracle_labelled(runs)["config"]) == ["ds2", "oracle", "oracle"]
    runs.loc[2, ["config", "config_id"]] = [ORACLE + ",headroom=0.8", "c" * 16]
    assert list(oracle_labelled(runs)["config"]) == ["ds2", "oracle bbbbbbbb", "oracle cccccccc"]
