"""A run's Kafka feed: its own topic on the broker, the workload's producer beside it, and the batches' account of
the topic (jobs.kafka_input).

The topic is new for every run (`elastic-<run id>`, `--source-partitions` partitions), so offset 0 of each partition
is the run's first event there, and it is deleted when the run ends: the exactly-once check has read what it needs.
The producer (jobs.kafka_producer) runs as a process of its own, started before Spark so that its start-up is over
when the first event is due; it waits for the run's anchor file, the same one the replay source waits for, and
writes each event when it is due. What it reports (how far it ran behind the schedule) goes into the run's summary,
so a slow producer is told from a slow query.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

from deploy.kafka import KafkaError, Topics
from jobs.errors import RunFailed
from jobs.kafka_input import KafkaAccount, TopicEnds, TopicLayout
from jobs.kafka_producer import run_schedule_file

PRODUCER_EXIT_TIMEOUT_S = 120.0  # after the run drained: the producer has written everything and flushes


class KafkaFeed:
    def __init__(self, bootstrap: str, topic: str, partitions: int, schedule, output: Path,
                 log: Callable[[str], None] = print):
        self.bootstrap, self.topic, self.partitions, self.output = bootstrap, topic, partitions, output
        self.topics = Topics(bootstrap)
        try:
            self.topics.create(topic, partitions)
        except KafkaError as exc:
            raise RunFailed(f"--source kafka: {exc}") from None
        self.account = KafkaAccount(TopicLayout(schedule, partitions), output / "checkpoint", topic,
                                    TopicEnds(bootstrap, topic, partitions, log=log))
        self.producer: subprocess.Popen | None = None
        self.schedule = schedule

    @property
    def report_file(self) -> Path:
        return self.output / "producer.json"

    @property
    def log_file(self) -> Path:
        return self.output / "producer.log"

    def start_producer(self, anchor_file: Path, schedule_state: str) -> None:
        """The producer, waiting for the anchor: started before Spark, so it is ready when the first event is due."""
        schedule_file = self.output / "schedule.json"
        run_schedule_file(schedule_file, json.loads(self.schedule.spec.to_json()), schedule_state)
        with open(self.log_file, "wb") as log:
            self.producer = subprocess.Popen(
                [sys.executable, "-m", "jobs.kafka_producer", "--schedule", str(schedule_file), "--topic", self.topic,
                 "--bootstrap", self.bootstrap, "--anchor-file", str(anchor_file),
                 "--report-json", str(self.report_file)],
                stdout=log, stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parent.parent)

    def check_producer(self) -> None:
        """A producer that died mid-run fails the run with its last words, instead of a stream that stops growing."""
        if self.producer is not None and self.producer.poll() not in (None, 0):
            raise RunFailed(f"the Kafka producer exited with {self.producer.returncode}: {self._last_words()}")

    def finish(self) -> dict[str, float]:
        """Wait for the producer to end (it has written every event by the time the run drained); its report."""
        if self.producer is None:
            return {}
        try:
            code = self.producer.wait(PRODUCER_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"the Kafka producer did not finish within {PRODUCER_EXIT_TIMEOUT_S:g} s of the run's "
                            f"end; see {self.log_file}") from None
        if code != 0:
            raise RunFailed(f"the Kafka producer exited with {code}: {self._last_words()}")
        report = json.loads(self.report_file.read_text())
        return {"producer_events": report["events"], "producer_lag_max_ms": report["lag_max_ms"],
                "producer_lag_p99_ms": report["lag_p99_ms"]}

    def _last_words(self) -> str:
        try:
            lines = self.log_file.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return lines[-1] if lines else "(no output)"

    def close(self) -> None:
        """Stop a producer still writing (a run cut short), and delete the run's topic."""
        if self.producer is not None and self.producer.poll() is None:
            self.producer.terminate()
            try:
                self.producer.wait(10)
            except subprocess.TimeoutExpired:
                self.producer.kill()
        if self.account.ends is not None:
            self.account.ends.close()
        try:
            self.topics.delete(self.topic, timeout_s=10)
        except KafkaError:
            pass  # a broker gone at the end: the topic goes with its data, or with `deploy.kafka stop --clean`
