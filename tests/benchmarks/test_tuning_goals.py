"""The goals read-out of tuning confirmations, on fabricated suites with known answers (MLflow store, no Spark)."""
from mlflow.tracking import MlflowClient

from benchmarks.tuning_goals import goals


def fabricate(tmp_path, runs):
    """runs: (controller, config, role, seed, status, slo, cost); a pruned run ends KILLED with tag pruned."""
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("g", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(exp).info.run_id
    for controller, config, role, seed, status, slo, cost in runs:
        tags = {"mlflow.parentRunId": parent, "config": config, "config_id": config, "controller": controller,
                "workload": "w", "seed": str(seed), "tuning.role": role}
        if status == "PRUNED":
            tags["pruned"] = "SLO target out of reach"
        run = client.create_run(exp, tags=tags).info.run_id
        client.log_param(run, "slo.target", 0.95)
        client.log_metric(run, "slo_attainment", slo)
        client.log_metric(run, "cost_slot_seconds", cost)
        client.set_terminated(run, "KILLED" if status == "PRUNED" else "FINISHED")
    return uri, parent


def test_a_tuned_controller_that_saves_enough_near_the_oracle_meets_both_goals(tmp_path):
    rows = []
    for seed in (1, 2, 3):
        rows += [("ds2", "ds2", "defaults", seed, "FINISHED", 1.0, 400 + seed),
                 ("ds2", "ds2:a=1", "top-1", seed, "FINISHED", min(1.0, 0.98 + 0.01 * seed), 300 + seed),
                 ("threshold", "threshold", "defaults", seed, "PRUNED", 0.1, 50),
                 ("threshold", "threshold:b=2", "top-1", seed, "FINISHED", 1.0, 350),
                 ("oracle", "oracle:x=1", "oracle", seed, "FINISHED", 1.0, 280)]
    uri, parent = fabricate(tmp_path, rows)
    text = "\n".join(goals(uri, [parent], bursty=set()))
    assert "ds2         defaults      3       0  100.0 [100.0, 100.0]" in text
    assert "tuned vs defaults: 24.9 % cheaper at SLO 99.7 % vs 100.0 %" in text
    assert "goal >= 15 % less: met" in text
    assert "the defaults miss the SLO target, the tuned settings meet it — goal met" in text  # threshold, pruned
    assert "best tuned controller at >= 99 % SLO: ds2, 1.08x the oracle — goal <= 1.15x: met" in text


def test_too_small_a_saving_or_too_far_from_the_oracle_is_missed(tmp_path):
    rows = []
    for seed in (1, 2, 3):
        rows += [("ds2", "ds2", "defaults", seed, "FINISHED", 1.0, 400),
                 ("ds2", "ds2:a=1", "top-1", seed, "FINISHED", 1.0, 380),
                 ("oracle", "oracle:x=1", "oracle", seed, "FINISHED", 1.0, 300)]
    uri, parent = fabricate(tmp_path, rows)
    text = "\n".join(goals(uri, [parent], bursty={"w"}))
    assert "ds2         top-1         3       0  100.0 [100.0, 100.0]" in text
    assert "5.0 % cheaper" in text and "goal >= 15 % less: MISSED" in text
    assert "ds2, 1.27x the oracle — goal <= 1.3x: met" in text  # judged by the bursty goal
