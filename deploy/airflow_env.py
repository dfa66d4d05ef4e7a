"""The environment an Airflow process of this project runs with: where its DAGs, plugins and metadata database
are, where tasks record in MLflow, which Spark master the default connection points at.

One function so the local stack (`make airflow`), the tests and a user's shell agree. The embedded default is
SQLite under .local/airflow; give `database_url` (e.g. postgresql+psycopg2://postgres@127.0.0.1/airflow) for the
server configuration that docker-compose.yaml deploys.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCAL = ROOT / ".local"


def airflow_env(home: Path | None = None, database_url: str | None = None, tracking_uri: str | None = None,
                mlflow_ui_url: str = "http://127.0.0.1:5000", spark_master: str = "local[4]",
                api_port: int = 8080) -> dict[str, str]:
    home = home or LOCAL / "airflow"
    home.mkdir(parents=True, exist_ok=True)
    tracking_uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{LOCAL / 'mlflow.db'}"
    bin_dir = str(Path(sys.executable).parent)
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_url or f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PARALLELISM": "4",  # a small machine: the default pre-forks 32 workers
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(api_port),
        "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{api_port}",
        "AIRFLOW__ELASTIC_STREAMING__MLFLOW_UI_URL": mlflow_ui_url,
        "AIRFLOW__ELASTIC_STREAMING__MLFLOW_TRACKING_URI": tracking_uri,
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": spark_master}),
        "MLFLOW_TRACKING_URI": tracking_uri,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
    }


if __name__ == "__main__":  # `eval "$(python -m deploy.airflow_env)"` sets up a shell to use the airflow CLI
    for key, value in airflow_env().items():
        print(f"export {key}={json.dumps(value)}")
