"""The restart benchmark's read-out: each rescale over the plain restart before it, and the downtime fit."""
import pytest

from benchmarks.native_restart import fit_downtime, ratios


def _restart(frm, to, downtime, repartition_s=0.0):
    return {"from_partitions": frm, "to_partitions": to, "downtime_s": downtime, "repartition_s": repartition_s,
            "repartitioned": frm != to}


def test_each_rescale_is_divided_by_the_plain_restart_before_it():
    result = {"restarts": [_restart(2, 2, 1.0), _restart(2, 4, 1.5, 0.4), _restart(4, 4, 2.0),
                           _restart(4, 8, 3.0, 0.9)]}
    assert [(r["direction"], r["ratio"]) for r in ratios(result)] == [("2->4", 1.5), ("4->8", 1.5)]


def test_the_fit_is_fixed_plus_per_megabyte():
    results = [{"logical_state_mb": mb, "restarts": [_restart(2, 4, 2.0 + 0.01 * mb), _restart(4, 4, 1.0)]}
               for mb in (1, 10, 100)]
    fixed, per_mb = fit_downtime(results)
    assert fixed == pytest.approx(2.0) and per_mb == pytest.approx(0.01)
