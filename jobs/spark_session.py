"""Starting Spark for an experiment run: the project's code shipped to the Python workers, the settings the
measurements depend on, and a warm-up so that start-up costs are paid before the clock starts.
"""
from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

from jobs.config import RunConfig
from jobs.jvm_archive import DEFAULT_DIR as ARCHIVE_DIR, built_options
from jobs.operators import apply_query
from jobs.query_runtime import batch_context
from jobs.sink import commit_batch
from jobs.recording.recorder import REPO_ROOT
from queries.api import Query

PACKAGES = ("controllers", "jobs", "params", "queries", "workloads")


def package_code(dest: Path, packages: tuple[str, ...] = PACKAGES) -> Path:
    """Zip the project's packages so Spark's Python workers (local or on a cluster) can import them."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for pkg in packages:
            for path in sorted((REPO_ROOT / pkg).rglob("*")):
                if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
                    zf.write(path, path.relative_to(REPO_ROOT))
    return dest


def spark_settings(config: RunConfig, controller_settings: dict[str, str] | None = None) -> dict[str, str]:
    """Settings the measurements depend on, with the controller's (controller_spark_settings); recorded with the
    run."""
    return {
        # AQE would coalesce or split shuffle partitions and so override the controller's degrees
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": str(config.max_degree),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
        "spark.python.worker.reuse": "true",
        # the JVM and the Python workers exchange Arrow batches over Unix domain sockets instead of TCP on
        # loopback: a Python stage's task then waits ~10 ms instead of ~40 ms for its input (docs/benchmarks.md)
        "spark.python.unix.domain.socket.enabled": "true",
        # how long the JVM waits for a new Python worker to connect (default 15 s): on a loaded 2-core machine a
        # worker's interpreter start took longer and failed the query ("Python worker failed to connect back")
        "spark.python.authenticate.socketTimeout": "60s",
        "spark.sql.streaming.metricsEnabled": "true",
        **(controller_settings or {}),
    }


def controller_spark_settings(controller) -> dict[str, str]:
    """What the controller needs from Spark: its own settings (dynamic allocation), or, when it sets the number
    of executors itself, executors of one core (so an executor is the unit of a decision) and Spark's dynamic
    allocation off (it would fight the controller)."""
    settings = dict(controller.spark_settings())
    if controller.initial_executors() is not None:
        settings.setdefault("spark.executor.cores", "1")
        settings["spark.dynamicAllocation.enabled"] = "false"
    return settings


def start_spark(config: RunConfig, code_zip: Path, controller_settings: dict[str, str] | None = None):
    # The Python workers must run this interpreter (with pyarrow, numpy) and import the project's packages,
    # including the data source planner process, which only sees PYTHONPATH and spark.submit.pyFiles.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = [str(code_zip)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    if (config.master or "").startswith(("local", "spark://127.0.0.1:", "spark://localhost:")):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a run on this machine binds to loopback only
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(f"elastic-{config.controller}-{config.spec.name}")
    if config.master:
        builder = builder.master(config.master)
    for k, v in spark_settings(config, controller_settings).items():
        builder = builder.config(k, v)
    builder = builder.config("spark.submit.pyFiles", str(code_zip))
    if config.source == "kafka":  # Spark's Kafka source (validated in jobs.config before anything starts)
        from deploy.jars import classpath

        builder = builder.config("spark.jars", ",".join(map(str, classpath("spark-kafka"))))
    builder = builder.config("spark.driver.extraJavaOptions", driver_java_options())
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.addPyFile(str(code_zip))
    from jobs.replay_source import ReplayDataSource

    spark.dataSource.register(ReplayDataSource)
    return spark


def driver_java_options(archive_folder: Path = ARCHIVE_DIR) -> str:
    """The driver JVM's options: the project's log configuration, and the class-data-sharing archive of this JDK and
    PySpark where `make setup` built one in `archive_folder` (a quarter less CPU to start a driver;
    jobs/jvm_archive.py)."""
    log4j = Path(__file__).with_name("log4j2.properties")
    return " ".join(filter(None, [f"-Dlog4j2.configurationFile={log4j.as_uri()}", built_options(archive_folder)]))


def warm_up(spark, spec, schedule_state: str, query: Query, degree: int, scratch: Path,
            chaining: bool = True) -> None:
    """Read a few thousand events through the replay source, run the operators on them and write them as the sink
    does, so Python workers, the source's generator and the writer have started before the clock starts."""
    commit_batch(scratch, 0, run_query_once(spark, spec, schedule_state, query, degree, 4000, chaining))


def run_query_once(spark, spec, schedule_state: str, query: Query, degree: int, events: int,
                   chaining: bool = True):
    """The query's operators at `degree` on the schedule's first `events` events, read as a batch (not the
    stream's source): the warm-up, and the keep-warm ping (jobs.keep_warm). Returns the output as Arrow."""
    df = (spark.read.format("workload_replay").option("spec", spec.to_json()).option("schedule_state", schedule_state)
          .option("stop", str(events)).load())
    return apply_query(df, query, {op: degree for op in query.names}, chaining=chaining,
                       context=batch_context(spec, schedule_state)).toArrow()
