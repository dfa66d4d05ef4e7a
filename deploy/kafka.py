"""An Apache Kafka broker on this machine: one node in KRaft mode (broker and controller in one JVM) on loopback, run
from the jars deploy/jars.py resolved into .local/jars/kafka-broker, so it starts without network.

    python -m deploy.kafka start                        # bootstrap 127.0.0.1:9092 (controller :9093)
    python -m deploy.kafka topic events --partitions 4  # a topic with a chosen partition count
    python -m deploy.kafka status
    python -m deploy.kafka stop [--clean]               # --clean: also remove the broker's data

Why not Kafka's bin/kafka-server-start.sh: there is no Kafka distribution here, only Maven artifacts, and, as for the
standalone Spark cluster (deploy/spark_cluster.py), the JVM is started in a process group of its own whose id this
module records (.local/kafka/broker.json), so `stop` ends what `start` began and nothing else. The data (topics and
their records) stays in .local/kafka/data between stop and start, so a broker restarted mid-run serves what it had;
`stop --clean` removes it. Topics are created with Kafka's admin API through confluent-kafka, the Python client the
workload producer uses as well; automatic topic creation is off, so a topic a run did not create is an error, not an
empty topic of the default size.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from deploy.jars import JarsError, classpath
from deploy.processes import port_taken, stop_group

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".local" / "kafka"
# the project's choices for a one-node broker of experiments: a single replica of everything, no delay before the
# first consumer group rebalance, no automatic topics
SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}
LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = warn
logger.apache.name = org.apache.kafka
logger.apache.level = warn
"""


class KafkaError(RuntimeError):
    pass


@dataclass
class KafkaBroker:
    """One broker-and-controller JVM; `state_dir` holds its configuration, data, log and recorded pid."""
    state_dir: Path = STATE
    port: int = 9092
    controller_port: int = 9093
    heap: str = "512m"
    pid: int | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.state_dir / "data"

    @property
    def log(self) -> Path:
        return self.state_dir / "broker.log"

    def _configure(self) -> Path:
        settings = {**SETTINGS, "log.dirs": str(self.data_dir),
                    "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
                    "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}"}
        properties = self.state_dir / "server.properties"
        properties.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        (self.state_dir / "log4j2.properties").write_text(LOG4J2.format(log=self.log))
        return properties

    def _java(self, *args: str) -> list[str]:
        try:
            jars = classpath("kafka-broker")
        except JarsError as exc:
            raise KafkaError(str(exc)) from None
        java = Path(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
        return [str(java), f"-Xmx{self.heap}", f"-Dlog4j2.configurationFile={self.state_dir / 'log4j2.properties'}",
                "-cp", os.pathsep.join(map(str, jars)), *args]

    def _format(self, properties: Path) -> None:
        """A data folder is formatted once, with a new cluster id; a formatted one is reused (a restart keeps it)."""
        if (self.data_dir / "meta.properties").exists():
            return
        cluster_id = _kafka_uuid()
        done = subprocess.run(self._java("kafka.tools.StorageTool", "format", "-t", cluster_id,
                                         "-c", str(properties)), capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise KafkaError(f"formatting {self.data_dir} failed: {(done.stdout + done.stderr)[-2000:]}")

    def start(self, timeout_s: float = 90.0) -> "KafkaBroker":
        for port in (self.port, self.controller_port):
            if port_taken(port):
                raise KafkaError(f"127.0.0.1:{port} is taken: is a broker already running? "
                                 f"(`python -m deploy.kafka stop`, or choose other ports)")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        properties = self._configure()
        self._format(properties)
        with open(self.log.with_suffix(".out"), "ab") as out:
            proc = subprocess.Popen(self._java("kafka.Kafka", str(properties)), stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = proc.pid
        self._save()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.pid = None
                self._save()
                raise KafkaError(f"the broker exited ({proc.returncode}) while starting; see {self.log} and "
                                 f"{self.log.with_suffix('.out')}")
            if self._answers():
                return self
            time.sleep(0.3)
        self.stop()
        raise KafkaError(f"the broker did not answer on {self.bootstrap} within {timeout_s:.0f} s; see {self.log}")

    def admin(self):
        return Topics(self.bootstrap).admin()

    def _answers(self) -> bool:
        """The broker serves metadata (and so can create topics), not merely accepts connections."""
        if not port_taken(self.port):
            return False
        try:
            return self.admin().list_topics(timeout=2).brokers != {}
        except Exception:  # noqa: BLE001 (confluent-kafka raises KafkaException with any error code while starting)
            return False

    def create_topic(self, name: str, partitions: int, timeout_s: float = 30.0) -> None:
        Topics(self.bootstrap).create(name, partitions, timeout_s)

    def delete_topic(self, name: str, timeout_s: float = 30.0) -> None:
        Topics(self.bootstrap).delete(name, timeout_s)

    def partitions(self, name: str) -> int:
        return Topics(self.bootstrap).partitions(name)

    def stop(self, clean: bool = False) -> None:
        if self.pid is not None:
            stop_group(self.pid, grace_s=20.0)
            self.pid = None
        (self.state_dir / "broker.json").unlink(missing_ok=True)
        if clean:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def _save(self) -> None:
        (self.state_dir / "broker.json").write_text(json.dumps(
            {"port": self.port, "controller_port": self.controller_port, "heap": self.heap, "pid": self.pid}))

    @classmethod
    def load(cls, state_dir: Path = STATE) -> "KafkaBroker | None":
        path = state_dir / "broker.json"
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        return cls(state_dir, raw["port"], raw["controller_port"], raw["heap"], raw["pid"])


class Topics:
    """The topics of a broker, by its bootstrap address: Kafka's admin API through confluent-kafka (a run creates
    and deletes its own topic on whatever broker it is given, not only the one this module started)."""

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def admin(self):
        from confluent_kafka.admin import AdminClient

        # log_level 3: errors only (librdkafka's notices on closing a client are not for the user)
        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 3})

    def create(self, name: str, partitions: int, timeout_s: float = 30.0) -> None:
        """A new topic of `partitions` partitions (one replica); an existing topic of that size is kept as it is."""
        from confluent_kafka.admin import NewTopic

        if partitions < 1:
            raise KafkaError(f"partitions: must be at least 1, got {partitions}")
        existing = self._partition_count(name, timeout_s)
        if existing is None:
            admin = self.admin()  # kept while the call runs: a collected client ends its calls unanswered
            futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
            try:
                _settle(futures[name], f"creating topic {name!r}", timeout_s)
                return
            except KafkaError as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise
            # the broker has the topic though its metadata did not show it yet (one created a moment before)
            existing = self._partition_count(name, timeout_s, wait=True)
            if existing is None:
                raise KafkaError(f"topic {name!r} exists on the broker, but its metadata did not show it within "
                                 f"{timeout_s:g} s")
        if existing != partitions:
            raise KafkaError(f"topic {name!r} exists with {existing} partitions, not {partitions}; delete it "
                             f"first (`python -m deploy.kafka topic {name} --delete`)")

    def _partition_count(self, name: str, timeout_s: float, wait: bool = False) -> int | None:
        """The topic's partition count from the broker's metadata (None: no such topic); with `wait`, until the
        metadata shows it, for at most `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            topic = self.admin().list_topics(timeout=timeout_s).topics.get(name)
            if topic is not None and topic.error is None and topic.partitions:
                return len(topic.partitions)
            if not wait or time.monotonic() > deadline:
                return None
            time.sleep(0.1)

    def delete(self, name: str, timeout_s: float = 30.0) -> None:
        admin = self.admin()
        _settle(admin.delete_topics([name])[name], f"deleting topic {name!r}", timeout_s)

    def partitions(self, name: str) -> int:
        return self._partition_count(name, 10.0) or 0


def _settle(future, what: str, timeout_s: float) -> None:
    """The admin call's outcome, its failure as a KafkaError that says what was asked."""
    try:
        future.result(timeout=timeout_s)
    except Exception as exc:  # noqa: BLE001 (confluent-kafka's KafkaException, or a timeout)
        raise KafkaError(f"{what} on the broker failed: {exc}") from None


def _kafka_uuid() -> str:
    """A cluster id as Kafka writes one (`kafka-storage random-uuid`): 16 random bytes, URL-safe base64, unpadded."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m deploy.kafka", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="action", required=True)
    start = sub.add_parser("start", help="start the broker (data kept from an earlier start)")
    start.add_argument("--port", type=int, default=9092, help="the clients' port (default: %(default)s)")
    start.add_argument("--controller-port", type=int, default=9093, help="the KRaft controller's port")
    start.add_argument("--heap", default="512m", help="the broker JVM's maximum heap (default: %(default)s)")
    stop = sub.add_parser("stop", help="stop the broker this project started")
    stop.add_argument("--clean", action="store_true", help="also remove its data (topics and records)")
    sub.add_parser("status", help="is it running, and its topics")
    topic = sub.add_parser("topic", help="create (or --delete) a topic")
    topic.add_argument("name")
    topic.add_argument("--partitions", type=int, default=1, help="partition count (default: %(default)s)")
    topic.add_argument("--delete", action="store_true")
    args = p.parse_args(argv)
    running = KafkaBroker.load()
    try:
        if args.action == "start":
            if running is not None and running.pid is not None:
                print(f"already running: {running.bootstrap} (stop it first)", file=sys.stderr)
                return 1
            broker = KafkaBroker(port=args.port, controller_port=args.controller_port, heap=args.heap).start()
            print(f"Kafka broker on {broker.bootstrap} (KRaft, one node; data {broker.data_dir}, log {broker.log})")
            return 0
        if args.action == "stop":
            (running or KafkaBroker()).stop(clean=args.clean)
            print("stopped" + (" and its data removed" if args.clean else ""))
            return 0
        if running is None or running.pid is None:
            print("no broker started by this project is running", file=sys.stderr)
            return 1
        if args.action == "status":
            topics = running.admin().list_topics(timeout=10).topics
            shown = {n: len(t.partitions) for n, t in sorted(topics.items()) if not n.startswith("__")}
            print(f"Kafka broker on {running.bootstrap}; topics: "
                  + (", ".join(f"{n} ({c} partitions)" for n, c in shown.items()) or "none"))
            return 0
        if args.delete:
            running.delete_topic(args.name)
            print(f"topic {args.name} deleted")
        else:
            running.create_topic(args.name, args.partitions)
            print(f"topic {args.name}: {running.partitions(args.name)} partitions on {running.bootstrap}")
        return 0
    except KafkaError as exc:
        print(f"deploy.kafka: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
