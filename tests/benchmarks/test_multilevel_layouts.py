"""The multi-level characterisation varies one level at a time and reports each row against its level's first,
with the first repeated at the end as the drift check (the Spark measurement itself is a benchmark, not a test)."""
import benchmarks.multilevel as multilevel


def test_each_level_changes_only_its_own_dimension():
    by_level = {}
    for layout in multilevel.layouts():
        by_level.setdefault(layout.level, []).append(layout)
    assert list(by_level) == ["partitions", "slots", "executors-per-host"]
    parts = by_level["partitions"]
    assert {(p.workers, p.executor_cores, p.max_cores) for p in parts} == {(2, 1, 2)}
    assert [p.degree for p in parts] == [1, 2, 4, 8], "degrees beyond the 2 slots"
    slots = by_level["slots"]
    assert [s.executor_cores for s in slots] == [1, 2, 3, 4] and all(s.degree == s.max_cores for s in slots)
    assert max(s.max_cores for s in slots) > 2, "beyond this machine's physical cores"
    hosts = by_level["executors-per-host"]
    assert {(h.workers, h.max_cores, h.degree) for h in hosts} == {(1, 2, 2)}
    assert sorted(h.executor_cores for h in hosts) == [1, 2], "same cores, one or two executors"


def test_rows_are_ratios_to_the_level_first_and_the_repeat_is_marked(monkeypatch):
    rates = iter([100.0, 150.0, 120.0, 80.0, 110.0, 50.0, 60.0, 70.0, 80.0, 55.0, 10.0, 9.0, 11.0])
    monkeypatch.setattr(multilevel, "measure", lambda layout, work, e, w, m: next(rates))
    table = multilevel.characterise(1000, 1, 1, log=lambda line: None)
    assert len(table) == len(multilevel.layouts()) + 3
    parts = table[table["level"] == "partitions"]
    assert list(parts["ratio_to_first"].round(2)) == [1.0, 1.5, 1.2, 0.8, 1.1]
    assert list(parts["drift_check"]) == [False] * 4 + [True]
    assert table[table["level"] == "executors-per-host"]["ratio_to_first"].round(2).tolist() == [1.0, 0.9, 1.1]
