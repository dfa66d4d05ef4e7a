"""The one line a failed run reports: for a full disk, which of the run's folders ran out (Spark's and pyarrow's own
messages name no path)."""
import pytest

from benchmarks.faults_streaming import small_filesystem
from jobs.errors import disk_full_reason

SPARK_TEXT = ("streaming query failed: org.apache.spark...ForeachBatchUserFuncException ... OSError: [Errno 28] "
              "Error writing bytes to file. Detail: [errno 28] No space left on device")


def test_other_failures_are_left_to_the_general_reason(tmp_path):
    assert disk_full_reason("RunFailed: gap in the events read", {"run's output": str(tmp_path)}) is None


def test_a_full_disk_names_the_folder_with_the_least_room(tmp_path):
    small = tmp_path / "small"
    with small_filesystem(small, "64k") as mounted:
        if not mounted:
            pytest.skip("this process may not mount a small tmpfs (needs root)")
        (small / "filler").write_bytes(b"\0" * 60_000)
        line = disk_full_reason(SPARK_TEXT, {"run's output": str(small / "job"),
                                             "artifact store": f"file://{tmp_path / 'artifacts'}",
                                             "tracking store": "http://mlflow:5000"})
    assert line.startswith(f"disk full: no space left on device for the run's output in {small} (")


def test_stores_that_are_not_local_folders_are_not_measured(tmp_path):
    line = disk_full_reason(SPARK_TEXT, {"artifact store": "mlflow-artifacts:/1/abc", "tracking store": "s3://b/x"})
    assert line == "disk full: no space left on device"


def test_a_deleted_kafka_topic_is_named_as_such_with_the_exception_it_came_as():
    from jobs.experiment import failure_reason

    text = ("[STREAM_FAILED] Query [id = 5d61] terminated with exception: org.apache.kafka.common.errors."
            "UnknownTopicOrPartitionException: This server does not host this topic-partition.")
    line = failure_reason(RuntimeError(text))
    assert line.startswith("the run's Kafka topic is no longer on the broker: it was deleted while the run read it (")
    assert "UnknownTopicOrPartitionException" in line
    assert failure_reason(RuntimeError("ValueError: bad")) == "ValueError: bad"
