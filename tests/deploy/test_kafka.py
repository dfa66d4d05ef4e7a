"""The project's Kafka broker (deploy/kafka.py) for real: KRaft on loopback from the resolved jars, a topic of a
chosen size, records written by the Python client and read back by Spark's own Kafka source, and a restart that keeps
them; and the errors a user gets before anything starts."""
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from deploy import jars
from deploy.kafka import KafkaBroker, KafkaError
from deploy.spark_cluster import free_port

pytestmark = pytest.mark.spark  # starts a broker JVM (and Spark in one test): with the server tests, not at nice 19


@pytest.fixture(scope="module")
def broker(kafka_broker):
    return kafka_broker


def _produce(bootstrap, topic, n):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, key=f"k{i % 17}".encode(), value=str(i).encode())
    assert producer.flush(30) == 0, "every record acknowledged"


def _offsets(bootstrap, topic, partitions):
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "offsets-check"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions))
    finally:
        consumer.close()


def test_records_produced_are_read_by_sparks_kafka_source_and_survive_a_broker_restart(broker, tmp_path):
    broker.create_topic("events", 3)
    assert broker.partitions("events") == 3
    broker.create_topic("events", 3)  # again, same size: kept as it is
    _produce(broker.bootstrap, "events", 300)

    script = tmp_path / "read.py"
    script.write_text(textwrap.dedent(f"""\
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.jars", {",".join(map(str, jars.classpath("spark-kafka")))!r}).getOrCreate())
        rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", {broker.bootstrap!r})
                .option("subscribe", "events").load().groupBy("partition").count().collect())
        print("partitions", sorted((r["partition"], r["count"]) for r in rows))
        spark.stop()
    """))
    done = subprocess.run([sys.executable, str(script)], env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    counts = eval(done.stdout.split("partitions ", 1)[1].splitlines()[0])  # noqa: S307 (our own script's list)
    assert [p for p, _ in counts] == [0, 1, 2] and sum(c for _, c in counts) == 300

    broker.stop()
    broker.start()
    assert broker.partitions("events") == 3
    assert _offsets(broker.bootstrap, "events", 3) == 300, "a restarted broker serves what it had"


def test_a_bad_partition_count_and_a_topic_of_another_size_are_refused(broker):
    with pytest.raises(KafkaError, match="partitions: must be at least 1, got 0"):
        broker.create_topic("t", 0)
    broker.create_topic("t", 2)
    with pytest.raises(KafkaError, match="exists with 2 partitions, not 4"):
        broker.create_topic("t", 4)


def test_a_taken_port_is_named_before_a_broker_starts(tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(KafkaError, match=rf"127.0.0.1:{port} is taken"):
            KafkaBroker(state_dir=tmp_path / "kafka", port=port, controller_port=free_port()).start()
    assert not (tmp_path / "kafka").exists()
