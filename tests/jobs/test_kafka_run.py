"""A run that reads Kafka as a user starts one (`python -m jobs.run --source kafka`), on the project's real broker:
the run's own topic, the producer beside it, Spark's Kafka source, every event once in the output, the backlog the
controller saw being the consumer lag; and a run with no broker refused before anything starts."""
import json

import pandas as pd
import pytest

from deploy.kafka import Topics
from deploy.spark_cluster import free_port
from tests.support import run_cli

pytestmark = pytest.mark.spark  # a broker JVM and a Spark run


@pytest.fixture(scope="module")
def kafka_run(kafka_broker, tracking_uri, tmp_path_factory):
    out = tmp_path_factory.mktemp("kafka-run")
    workload = out / "w.yaml"
    workload.write_text("name: kafka-step\nprofile: step\nparams: {low: 500, high: 3000, at_s: 8}\nduration_s: 16\n"
                        "seed: 4\nkeys: {count: 300}\n")
    proc = run_cli(["--controller", "scripted", "--param", "changes={3: {parse: 2, aggregate: 3}}",
                    "--workload", str(workload), "--trigger", "1", "--source", "kafka", "--source-partitions", "3",
                    "--kafka-bootstrap", kafka_broker.bootstrap, "--tracking-uri", tracking_uri,
                    "--experiment", "kafka-it", "--output-dir", str(out / "job"),
                    "--summary-json", str(out / "summary.json")])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((out / "summary.json").read_text()), out / "job", kafka_broker


def test_every_event_is_read_from_the_topic_and_in_the_output_once(kafka_run):
    summary, job, _ = kafka_run
    n = 500 * 8 + 3000 * 8
    assert summary["records_scheduled"] == summary["producer_events"] == n
    assert summary["records_in"] == summary["records_out"] == n
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    partials = pd.read_parquet(job / "sink")
    assert partials["events"].sum() == n and partials["event_id_sum"].sum() == n * (n - 1) // 2
    markers = [json.loads(p.read_text()) for p in (job / "sink").glob("batch_id=*/_SUCCESS")]
    assert markers and all(set(m) == {"offsets", "events"} and len(m["offsets"]) == 3 for m in markers)


def test_the_backlog_is_the_consumer_lag_and_the_run_leaves_no_topic(kafka_run):
    summary, job, broker = kafka_run
    batches = pd.read_parquet(job / "artifacts" / "batches.parquet")
    assert (batches["backlog"] >= 0).all()
    # at each batch's end the producer had written about what was due; the query had read up to the batch's offsets
    behind = (batches["backlog"] - (batches["arrivals"].cumsum() - batches["records_read"].cumsum())).abs()
    assert behind.median() <= 0.2 * batches["arrivals"].median(), batches[["arrivals", "records_read", "backlog"]]
    assert batches["tasks_parse"].iloc[-1] == 2, "a degree change is in force on Kafka as on the replay source"
    assert summary["producer_lag_p99_ms"] < 1000, "the producer kept up with the schedule"
    topics = Topics(broker.bootstrap).admin().list_topics(timeout=10).topics
    assert not [t for t in topics if t.startswith("elastic-")], "the run's topic is deleted at its end"


def test_no_broker_is_a_one_line_error_before_anything_starts(tracking_uri, tmp_path):
    port = free_port()
    proc = run_cli(["--controller", "static", "--workload", "step", "--duration", "5", "--source", "kafka",
                    "--kafka-bootstrap", f"127.0.0.1:{port}", "--tracking-uri", tracking_uri,
                    "--output-dir", str(tmp_path / "job")], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(f"error: --kafka-bootstrap 127.0.0.1:{port}: no broker "
                                                          "answers")
    assert not (tmp_path / "job").exists()
