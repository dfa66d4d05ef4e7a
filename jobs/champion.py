"""The promoted configuration of a workload class, as a production job loads it from the MLflow Model Registry.

Each workload class W has a registered model `controller-for-W`; its versions hold controller configurations
(a `controller.json` artifact {controller, params}, the same config in the version's tags) and the alias
`champion` marks the one to use. `python -m jobs.run --champion W` starts with exactly that configuration.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import controllers

MODEL_PREFIX = "controller-for-"
CHAMPION_ALIAS = "champion"
CONFIG_FILE = "controller.json"


class ChampionNotFound(Exception):
    """No champion can be loaded for the workload class; the message says why and what to do."""


def model_name(workload_class: str) -> str:
    return MODEL_PREFIX + workload_class


def champion_class(workload: str, spark_query: str | None = None) -> str:
    """The workload class a champion is promoted for: the workload, and the native query when there is one (a
    configuration that suits one query on a workload is measured for that query only)."""
    from jobs.config import query_workload_label

    return workload if spark_query is None else query_workload_label(workload, spark_query)


def champion_command(workload_class: str, spark_query: str | None = None) -> str:
    """The command that starts a job with the class's champion."""
    if spark_query is None:
        return f"python -m jobs.run --champion {workload_class}"
    workload = workload_class.removesuffix(champion_class("", spark_query))
    return f"python -m jobs.run --champion {workload} --spark-query {spark_query}"


@dataclass(frozen=True)
class ChampionConfig:
    workload_class: str
    model: str
    version: str
    controller: str
    params: dict[str, Any]
    config_id: str


def load_champion(tracking_uri: str, workload_class: str) -> ChampionConfig:
    from mlflow.artifacts import download_artifacts
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    name = model_name(workload_class)
    try:
        client.get_registered_model(name)
    except MlflowException:
        raise ChampionNotFound(
            f"no registered model {name!r} at {tracking_uri}: nothing has been promoted for workload class "
            f"{workload_class!r} yet (run an experiment on it and promote: python -m analysis.promote)") from None
    try:
        version = client.get_model_version_by_alias(name, CHAMPION_ALIAS)
    except MlflowException:
        raise ChampionNotFound(f"registered model {name!r} has no {CHAMPION_ALIAS!r} alias") from None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(download_artifacts(artifact_uri=version.source, tracking_uri=tracking_uri, dst_path=tmp))
        raw = json.loads((folder / CONFIG_FILE).read_text())
    recorded = version.tags.get("config_id", "")
    try:
        actual = controllers.config_id(raw["controller"], raw["params"])
    except controllers.ConfigError as exc:
        raise ChampionNotFound(f"{name} version {version.version} no longer validates: {exc}") from None
    if recorded and actual != recorded:
        # e.g. the controller gained a parameter since the promotion: the job would not run what was measured
        raise ChampionNotFound(
            f"{name} version {version.version}: its configuration now validates to config id {actual}, not the "
            f"promoted {recorded}; re-run the suite with this code and promote again")
    return ChampionConfig(workload_class, name, str(version.version), raw["controller"], dict(raw["params"]), actual)
