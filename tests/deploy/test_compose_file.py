"""docker-compose.yaml, checked for what can be checked without a Docker engine: the services and their start-up
order, images pinned (and at the versions requirements.txt pins), ports on loopback only, credentials only from the
user's .env, and the wiring between Airflow, Spark and MLflow. (`tests/deploy/test_compose_mlflow.py` runs the
compose file's MLflow server command for real against PostgreSQL.)"""
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_TEXT = (ROOT / "docker-compose.yaml").read_text()
COMPOSE = yaml.safe_load(COMPOSE_TEXT)
SERVICES = COMPOSE["services"]
DOCKERFILE = (ROOT / "deploy" / "docker" / "Dockerfile").read_text()
AIRFLOW = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")
LONG_RUNNING = [name for name in SERVICES if name != "airflow-init"]


def pin(package: str) -> str:
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith(f"{package}=="):
            return line.split("==")[1].strip()
    raise AssertionError(f"{package} is not pinned in requirements.txt")


def test_the_services_the_deployment_needs_are_there():
    assert {"postgres", "kafka", "mlflow", "spark-master", "spark-worker-1", "spark-worker-2", "airflow-init",
            *AIRFLOW} <= set(SERVICES)
    assert SERVICES["redis"]["profiles"] == ["celery"] and SERVICES["airflow-worker"]["profiles"] == ["celery"]
    executor = SERVICES["airflow-scheduler"]["environment"]["AIRFLOW__CORE__EXECUTOR"]
    assert executor == "${AIRFLOW_EXECUTOR:-LocalExecutor}"


def test_every_published_port_binds_loopback_only():
    published = [(name, p) for name, s in SERVICES.items() for p in s.get("ports", [])]
    assert published, "the UIs must be reachable from the host"
    for name, port in published:
        assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert {p.split(":")[1] for _, p in published} == {"5000", "7077", "8090", "8080", "9094"}


def test_every_image_is_pinned_and_the_project_image_matches_requirements():
    for name, service in SERVICES.items():
        image = service["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest" and re.search(r"\d", tag), f"{name}: image {image} is not pinned"
        if "build" not in service:
            assert re.match(r"^\d+\.\d+", tag), f"{name}: {image} should pin a release, not a major version"
    base = re.search(r"^FROM apache/airflow:(\S+)-python(\d+\.\d+)$", DOCKERFILE, re.MULTILINE)
    assert base, "the image builds on a pinned apache/airflow tag"
    assert base.group(1) == pin("apache-airflow"), "Airflow in the image and in requirements.txt must agree"
    # Spark (pyspark) and MLflow come from requirements.txt + constraints.txt in the image: the same pins
    assert "-r /opt/elastic/requirements.txt" in DOCKERFILE and "-c /opt/elastic/constraints.txt" in DOCKERFILE
    assert f"python{base.group(2)}/site-packages/pyspark" in DOCKERFILE, "SPARK_HOME is the image's pyspark"
    assert pin("pyspark") and pin("mlflow")
    constraints = (ROOT / "constraints.txt").read_text()
    assert f"pyspark=={pin('pyspark')}" in constraints and f"mlflow=={pin('mlflow')}" in constraints
    built = {s["image"] for s in SERVICES.values() if "build" in s}
    assert len(built) == 1, "one project image for Airflow, Spark and MLflow"


def test_credentials_only_come_from_the_users_env_file():
    used = set(re.findall(r"(?<!\$)\$\{([A-Z_]+)", COMPOSE_TEXT))  # $${X} is the container's own variable
    example = dict(line.split("=", 1) for line in (ROOT / ".env.example").read_text().splitlines()
                   if line and not line.startswith("#"))
    assert used <= set(example), f"variables not documented in .env.example: {sorted(used - set(example))}"
    for secret in ("POSTGRES_PASSWORD", "AIRFLOW_ADMIN_PASSWORD", "AIRFLOW_FERNET_KEY", "AIRFLOW_JWT_SECRET",
                   "MLFLOW_ADMIN_PASSWORD", "MLFLOW_SECRET_KEY"):
        assert f"${{{secret}:?" in COMPOSE_TEXT, f"{secret} must be required, never defaulted"
        # empty in the example: `${X:?}` refuses an empty value as it refuses a missing one, so compose will not
        # start from an unedited copy (a placeholder such as 'change-me' would have been accepted as the password)
        assert example[secret] == "", f"{secret} must be empty in .env.example, got {example[secret]!r}"
    assert not re.search(r"(?i)password[\"']?\s*[:=]\s*[\"']?(?!\$)[\w-]{4,}", COMPOSE_TEXT.replace(
        "AIRFLOW_ADMIN_PASSWORD: ${", "")), "no literal password in docker-compose.yaml"
    for ignore in (".gitignore", ".dockerignore"):
        assert ".env" in (ROOT / ignore).read_text().split(), f"{ignore} must exclude .env"


def test_the_kafka_service_is_the_broker_the_project_runs_locally_on_kraft():
    from deploy.jars import GROUPS

    kafka = SERVICES["kafka"]
    local = next(c for c in GROUPS["kafka-broker"] if c.startswith("org.apache.kafka:kafka_"))
    assert kafka["image"] == f"apache/kafka:{local.rsplit(':', 1)[1]}", "one Kafka version, in compose and locally"
    env = kafka["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller" and env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka:9093"
    assert "PLAINTEXT://kafka:9092" in env["KAFKA_ADVERTISED_LISTENERS"], "services reach it by its name"
    assert "HOST://127.0.0.1:9094" in env["KAFKA_ADVERTISED_LISTENERS"], "the host reaches the published port"
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false", "as the local broker: runs create their topics"
    assert "kafka-data:/var/lib/kafka/data" in kafka["volumes"] and env["KAFKA_LOG_DIRS"] == "/var/lib/kafka/data"


def test_start_up_order_and_health_checks():
    for name in LONG_RUNNING:
        assert "healthcheck" in SERVICES[name], f"{name} has no health check"
        assert SERVICES[name]["restart"] == "unless-stopped"
    for name, service in SERVICES.items():
        for dependency, condition in service.get("depends_on", {}).items():
            wanted = condition["condition"]
            if dependency == "airflow-init":
                assert wanted == "service_completed_successfully"
            else:
                assert wanted == "service_healthy" and "healthcheck" in SERVICES[dependency], (name, dependency)
    for name in AIRFLOW:
        assert {"postgres", "mlflow", "spark-master", "airflow-init"} <= set(SERVICES[name]["depends_on"])
    assert SERVICES["mlflow"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert "airflow db migrate" in SERVICES["airflow-init"]["command"][1]


def test_airflow_spark_and_mlflow_are_wired_to_each_other():
    import json

    from deploy.local_stack import POOL

    env = SERVICES["airflow-scheduler"]["environment"]
    master = SERVICES["spark-master"]["command"][-1]
    assert "--host spark-master --port 7077" in master
    assert json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])["host"] == "spark://spark-master:7077"
    for worker in ("spark-worker-1", "spark-worker-2"):
        assert SERVICES[worker]["command"][-1].endswith("spark://spark-master:7077")
    assert "--port 5000" in SERVICES["mlflow"]["command"][-1]
    assert env["MLFLOW_TRACKING_URI"] == env["AIRFLOW__ELASTIC_STREAMING__MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
    assert env["AIRFLOW__ELASTIC_STREAMING__MLFLOW_UI_URL"] == "http://127.0.0.1:5000"
    assert f"airflow pools set {POOL[0]} 1" in SERVICES["airflow-init"]["command"][1]
    assert "COPY --chown=airflow:root . /opt/elastic" in DOCKERFILE
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/elastic/dags"
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == "/opt/elastic/plugins"
    # the driver (scheduler or Celery worker) and the executors see the same checkpoints and sinks
    runs = "elastic-runs:/opt/elastic/.local/runs"
    for name in ("airflow-scheduler", "airflow-worker", "spark-worker-1", "spark-worker-2"):
        assert runs in SERVICES[name]["volumes"], name
    assert env["SPARK_LOCAL_HOSTNAME"] == SERVICES["airflow-scheduler"]["hostname"]
    assert "/opt/airflow/auth/passwords.json" in SERVICES["airflow-init"]["command"][1]
    assert "mlflow-artifacts:/mlflow/artifacts" in SERVICES["mlflow"]["volumes"]


@pytest.mark.parametrize("path", ["docker-compose.yaml", "deploy/docker/Dockerfile", ".env.example"])
def test_the_clusters_guide_explains_how_to_start_it(path):
    section = (ROOT / "docs" / "guides" / "clusters.md").read_text()
    assert path in section
    assert "cp .env.example .env" in section and "docker compose up -d" in section
