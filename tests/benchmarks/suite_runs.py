"""A suite's runs as the goal read-outs find them, fabricated with known answers: a parent run and its children
(tags and metrics, FINISHED) in a real MLflow store, no Spark. Shared by the read-outs' tests."""
from mlflow.tracking import MlflowClient


def fabricated_suite(tmp_path, experiment, children, uri=None):
    """children: (tags, metrics) per child run; the store at `uri` (default a new one in tmp_path) gains the
    experiment if it lacks it and a new parent run. Returns (uri, parent run id)."""
    uri = uri or f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    exp = found.experiment_id if found else client.create_experiment(
        experiment, artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(exp).info.run_id
    for tags, metrics in children:
        run = client.create_run(exp, tags={"mlflow.parentRunId": parent, **tags}).info.run_id
        for key, value in metrics.items():
            client.log_metric(run, key, value)
        client.set_terminated(run, "FINISHED")
    return uri, parent
