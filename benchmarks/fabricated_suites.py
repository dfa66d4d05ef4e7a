"""Suites with known answers, recorded in MLflow exactly as jobs.run records a suite's runs (tags, the SLO target,
the controller's config, the two metrics promotion reads): the promotion race of the fault suite and the promotion
tests use them, because the question there is what two promoters do, not what Spark measured."""
from __future__ import annotations

import controllers

# (controller, params, [(SLO attainment, cost) per seed]): the cheap one wins on cost at the same SLO
CHEAP = ("threshold", {"cooldown_s": 6.0}, [(0.99, 200), (0.98, 205), (0.99, 198), (0.99, 202)])
DEAR = ("static", {"degree": 3}, [(1.0, 360), (1.0, 362), (1.0, 359), (1.0, 361)])


def record_suite(uri: str, configs, failed_seeds: dict[str, list[int]] | None = None, experiment: str = "promo",
                 workload: str = "step") -> str:
    """A parent run with one child per (configuration, seed); returns the parent's id."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else client.create_experiment(experiment)
    parent = client.create_run(exp_id, run_name="suite").info.run_id
    for name, params, values in configs:
        full = controllers.validate_config(name, params)
        label = controllers.config_label(name, params)
        for seed, (slo, cost) in enumerate(values):
            failed = seed in (failed_seeds or {}).get(label, [])
            run = client.create_run(exp_id, tags={
                "mlflow.parentRunId": parent, "controller": name, "config": label,
                "config_id": controllers.config_id(name, params), "workload": workload,
                "seed": str(seed)}).info.run_id
            client.log_param(run, "slo.target", "0.95")
            client.log_dict(run, {"controller": name, "params": full}, "config/controller.json")
            if not failed:
                client.log_metric(run, "slo_attainment", slo)
                client.log_metric(run, "cost_slot_seconds", cost)
            client.set_terminated(run, "FAILED" if failed else "FINISHED")
    client.set_terminated(parent, "FINISHED")
    return parent
