"""The AUTOSCALE capacity comparison reads iterations from decision records and credits each slot what the plant's
operator can do."""
from studies.autoscale_capacity import capacity_per_slot, capacity_table, iterations, plant_records, timeline
from studies.guards_simulated import OPS, PLANT
from workloads import Schedule, load_workload, parse_workload


def _record(t, degree, nda=0.5, capacity=1000.0):
    details = {f"{k}_{op}": v for op in OPS for k, v in (("nda", nda), ("charge", nda * capacity),
                                                            ("capacity", capacity))}
    return {"time_s": t, "before": {op: degree for op in OPS}, "details": details}


def test_only_iterations_count_and_the_first_has_no_span():
    records = [_record(20.0, 2, capacity=2000.0), {"time_s": 12.0, "before": {}, "details": {}}, _record(10.0, 1)]
    found = iterations(records, OPS)
    assert [(it.time_s, it.span_s) for it in found] == [(10.0, None), (20.0, 10.0)]
    # 2000 events credited to 2 slots over a 10 s iteration
    assert capacity_per_slot(found, "enrich") == {2: [100.0]}


def test_on_the_plant_a_slot_is_credited_what_the_operator_can_do():
    spec = {**load_workload("step").to_dict(), "seed": 1}
    schedule = Schedule(parse_workload(spec, source="test"))
    found = iterations(plant_records({"theta_min": 0.3, "theta_max": 0.8, "guards": False}, schedule, PLANT, None), OPS)
    assert len(found) >= 4
    enrich = next(op for op in PLANT.operators if op.name == "enrich")
    credited = [v for values in capacity_per_slot(found, "enrich").values() for v in values]
    # each task also pays its start-up, so a slot is credited a little less than 1 / service time
    assert credited and all(0.8 / enrich.service_s <= v <= 1.0 / enrich.service_s for v in credited), credited
    table = capacity_table(found, [found], OPS)
    assert any(line.startswith("| enrich | 1 |") and line.endswith("| 1.00 |") for line in table), table
    assert len(timeline(found, found, "enrich")) == 2 + min(6, len(found))
