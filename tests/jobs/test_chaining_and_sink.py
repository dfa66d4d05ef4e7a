"""Operator chaining (jobs.operators.chains) and the driver-side exactly-once sink (jobs.sink), the two cuts of the
per-batch overhead: chaining changes which stage an operator runs in, never its degree, its result or
its own metrics; the sink commits a batch's folder whole or not at all, and a replayed batch replaces its folder."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs.operators import EMPTY_STATS, _chained, chains, merge_stats, task_function, topology_query
from jobs.sink import batch_folder, commit_batch
from jobs.sink_check import verify_output
from jobs.topology import DEFAULT_TOPOLOGY
from queries.api import BatchContext

QUERY = topology_query(DEFAULT_TOPOLOGY)

NAMES = DEFAULT_TOPOLOGY.names  # parse, enrich, aggregate (keyed), sink


def grouped(degrees: dict[str, int], chaining: bool = True) -> list[tuple[str, ...]]:
    return [tuple(op.name for op in chain) for chain in chains(QUERY, degrees, chaining)]


@pytest.mark.parametrize("degrees, expected", [
    ({"parse": 2, "enrich": 2, "aggregate": 2, "sink": 2}, [("parse", "enrich"), ("aggregate", "sink")]),
    ({"parse": 1, "enrich": 3, "aggregate": 3, "sink": 3}, [("parse",), ("enrich",), ("aggregate", "sink")]),
    ({"parse": 2, "enrich": 2, "aggregate": 4, "sink": 2}, [("parse", "enrich"), ("aggregate",), ("sink",)]),
    # a keyed operator always starts a stage: its input must be partitioned by key, whatever the degrees
    ({"parse": 3, "enrich": 3, "aggregate": 3, "sink": 1}, [("parse", "enrich"), ("aggregate",), ("sink",)]),
])
def test_an_operator_joins_its_predecessors_stage_only_at_the_same_degree_and_not_keyed(degrees, expected):
    assert grouped(degrees) == expected
    assert grouped(degrees, chaining=False) == [(name,) for name in NAMES]


def test_the_command_line_turns_chaining_off_and_the_run_records_it():
    from jobs.run import build_parser, config_from_args

    args = ["--controller", "static", "--workload", "constant"]
    assert config_from_args(build_parser().parse_args(args)).chain_operators is True
    assert config_from_args(build_parser().parse_args(args + ["--no-chaining"])).chain_operators is False


class _Accumulator:
    def __init__(self):
        self.value = EMPTY_STATS

    def add(self, stats):
        self.value = merge_stats(self.value, stats)


def _events(n: int, first: int = 0) -> list[pa.RecordBatch]:
    ids = list(range(first, first + n))
    return [pa.RecordBatch.from_pydict({
        "event_id": pa.array(ids, pa.int64()),
        "arrival_ts": pa.array([1_000_000 + 1000 * i for i in ids], pa.timestamp("us", tz="UTC")),
        "key": pa.array([i % 7 for i in ids], pa.int32()),
        "payload": pa.array([(i % 250).to_bytes(4, "little") for i in ids], pa.binary()),
    })]


def _operator(op, stats):
    return task_function(op, BatchContext(), stats, count_input_ids=True)


def test_chained_operators_give_the_same_output_and_each_keeps_its_own_metrics():
    ops = QUERY.operators[:2]  # parse, enrich: the stateless pair a stage chains
    separate_stats = {op.name: _Accumulator() for op in ops}
    data = _events(500)
    for op in ops:
        data = list(_operator(op, separate_stats[op.name])(iter(data)))
    chained_stats = {op.name: _Accumulator() for op in ops}
    chained = list(_chained([_operator(op, chained_stats[op.name]) for op in ops])(iter(_events(500))))
    assert pa.Table.from_batches(chained).equals(pa.Table.from_batches(data))
    for op in ops:
        records_in, records_out, events_out, id_sum, busy, tasks, *_ = chained_stats[op.name].value
        assert (records_in, records_out, events_out, id_sum, tasks) == (500, 500, 500, sum(range(500)), 1)
        # enrich declares 150 us per record of waiting: 75 ms that must be on enrich's clock, not parse's
    assert chained_stats["enrich"].value[4] >= 0.075
    # parse's clock in the chain is parse's own work, as when it runs alone; on a loaded machine that work alone can
    # take longer than enrich's wait, so parse is compared with itself, not with a fixed bound
    parse_chained, parse_alone = chained_stats["parse"].value[4], separate_stats["parse"].value[4]
    assert parse_chained < 0.075 or parse_chained < parse_alone + 0.075 / 2, (parse_chained, parse_alone)


def _table(n: int, first: int = 0) -> pa.Table:
    return pa.table({"events": pa.array([n], pa.int64()),
                     "event_id_sum": pa.array([n * first + n * (n - 1) // 2], pa.int64())})


def test_the_sink_commits_a_whole_folder_and_a_replayed_batch_replaces_it(tmp_path):
    commit_batch(tmp_path, 3, _table(10))
    folder = batch_folder(tmp_path, 3)
    assert (folder / "_SUCCESS").exists()
    commit_batch(tmp_path, 3, _table(4, 2))  # the batch replayed from the checkpoint, its own events again
    assert pq.read_table(folder).column("events").to_pylist() == [4]
    assert [p.name for p in tmp_path.iterdir()] == ["batch_id=3"]


def test_a_commit_cut_short_leaves_nothing_and_the_check_removes_any_leftover(tmp_path, monkeypatch):
    commit_batch(tmp_path, 0, _table(5))

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full_disk)
    with pytest.raises(OSError):
        commit_batch(tmp_path, 1, _table(5, 5))
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batch_id=0"]
    (tmp_path / ".batch_id=1.dead.tmp").mkdir()  # as a killed process would leave it
    (tmp_path / "batch_id=2").mkdir()  # a folder without its _SUCCESS marker
    assert verify_output(tmp_path, {0: (0, 5)}) == (5, 0, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batch_id=0"]


# ---- the service level against the measured floor (checked before Spark starts) -----------------------------------
def _calibration(tmp_path, floor: float, master: str = "local[4]"):
    import yaml

    path = tmp_path / "oracle.yaml"
    path.write_text(yaml.safe_dump({"controller": "oracle", "params": {"batch_overhead_s": floor},
                                    "calibration": {"measured": {"master": master, "at": 1795000000.0}}}))
    return path


def _config(**settings):
    from jobs.config import RunConfig

    return RunConfig(controller="static", controller_params={}, workload="constant", **settings)


def test_an_slo_below_the_measured_floor_is_refused_naming_the_floor_and_how_it_was_measured(tmp_path, monkeypatch):
    from jobs.config import InputError

    monkeypatch.setenv("ELASTIC_CALIBRATION", str(_calibration(tmp_path, 0.45)))
    with pytest.raises(InputError) as err:
        _config(slo_latency_s=0.3, trigger_s=0.25).validate()
    text = str(err.value)
    assert "--slo-latency 0.3 s is below this machine's floor of 0.45 s" in text
    assert "`python -m jobs.calibrate` on local[4]" in text and "oracle.yaml" in text
    # measured on another master: it says nothing about this one
    monkeypatch.setenv("ELASTIC_CALIBRATION", str(_calibration(tmp_path, 0.45, master="spark://h:7077")))
    assert _config(slo_latency_s=0.3, trigger_s=0.25, tracking_uri=f"sqlite:///{tmp_path}/m.db").validate()


def test_a_trigger_longer_than_the_slo_is_a_warning_and_a_zero_trigger_an_error(tmp_path):
    from jobs.config import InputError

    config = _config(slo_latency_s=1.0, trigger_s=2.0, tracking_uri=f"sqlite:///{tmp_path}/m.db").validate()
    assert any("--trigger 2 s is longer than --slo-latency 1 s" in w for w in config.warnings)
    with pytest.raises(InputError, match="--trigger"):
        _config(trigger_s=0.0).validate()
