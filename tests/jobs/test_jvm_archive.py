"""The class-data-sharing archive of a Spark driver's classes (jobs/jvm_archive.py): what its check reads from Spark's
launch command, what its name depends on, that no Java means no archive rather than a failure, and that the archive
`make test` gives its Spark runs is the one their drivers map."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

from jobs import jvm_archive
from jobs.jvm_archive import ArchiveUnavailable, archive_key, classpath_options

LAUNCH = ("Spark Command: /usr/lib/jvm/java-17/bin/java -cp /v/pyspark/conf:/v/pyspark/jars/slf4j-api.jar:/v/pyspark/"
          "jars/* -XX:TieredStopAtLevel=1 -Xmx1g -Dlog4j2.configurationFile=file:///r/jobs/log4j2.properties "
          "--add-modules=jdk.incubator.vector --add-opens=java.base/java.lang=ALL-UNNAMED "
          "org.apache.spark.deploy.SparkSubmit --conf spark.app.name=x pyspark-shell")


def test_the_check_takes_the_launchers_classpath_and_added_modules_and_nothing_after_the_main_class():
    assert classpath_options(LAUNCH) == ["-cp", "/v/pyspark/conf:/v/pyspark/jars/slf4j-api.jar:/v/pyspark/jars/*",
                                         "--add-modules=jdk.incubator.vector"]


@pytest.mark.parametrize("command, why", [
    (LAUNCH.replace("/v/pyspark/conf", "/my venv/pyspark/conf"), "space"),
    (LAUNCH.replace("org.apache.spark.deploy.SparkSubmit", "org.example.Main"), "does not start"),
    (LAUNCH.replace(" -cp ", " -classpath "), "no -cp"),
])
def test_a_launch_command_that_cannot_be_read_back_is_refused_not_guessed(command, why):
    with pytest.raises(ArchiveUnavailable, match=why):
        classpath_options(command)


def test_an_archive_is_named_for_one_jdk_and_one_set_of_pyspark_jars():
    jars = ["spark-core_2.13-4.0.1.jar", "py4j-0.10.9.9.jar"]
    key = archive_key("openjdk version 17.0.15", jars)
    assert key == archive_key("openjdk version 17.0.15", list(reversed(jars))), "the jars' order does not matter"
    assert key != archive_key("openjdk version 17.0.16", jars)
    assert key != archive_key("openjdk version 17.0.15", ["spark-core_2.13-4.0.2.jar", "py4j-0.10.9.9.jar"])
    assert re.fullmatch(r"[0-9a-f]{16}", key)


def test_without_java_it_prints_no_options_and_says_why(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(jvm_archive, "java_binary", lambda: None)
    assert jvm_archive.main(["--folder", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "no java found" in err and not any(tmp_path.iterdir())


def test_a_folder_with_a_space_gives_no_archive_since_the_jvm_option_would_be_split(tmp_path, capsys):
    assert jvm_archive.main(["--folder", str(tmp_path / "my archives")]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "space" in err and not (tmp_path / "my archives").exists()


@pytest.mark.spark
def test_the_archive_make_test_gives_is_the_one_a_pyspark_driver_maps(tmp_path):
    """-Xshare:on: a JVM that cannot map the archive (another JDK, a classpath that does not match) refuses to start
    instead of loading its classes as usual, so this run succeeds only if the archive fits PySpark's driver."""
    named = re.search(r"-XX:SharedArchiveFile=(\S+)", os.environ.get("SPARK_SUBMIT_OPTS", ""))
    if named is None:
        pytest.skip("SPARK_SUBMIT_OPTS names no archive: `make test` gives one (python -m jobs.jvm_archive)")
    script = tmp_path / "count.py"
    script.write_text(textwrap.dedent("""\
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        print("counted", spark.range(7).count())
        spark.stop()
    """))
    env = {**os.environ, "SPARK_SUBMIT_OPTS": f"-Xshare:on -XX:SharedArchiveFile={named.group(1)}",
           "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "counted 7" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


def test_a_driver_maps_the_archive_once_one_was_built_and_starts_without_one_before(tmp_path):
    """Every Spark driver the project starts in-process adds the archive of this JDK and PySpark to its options once
    `make setup` has built it, and nothing while there is none (built_options never builds)."""
    from jobs import spark_session

    if jvm_archive.java_binary() is None:
        pytest.skip("no java here: no archive can be named")
    assert jvm_archive.built_options(tmp_path) == "" and not any(tmp_path.iterdir())
    archive = jvm_archive.archive_path(tmp_path)
    archive.write_bytes(b"")
    assert jvm_archive.built_options(tmp_path) == f"-XX:SharedArchiveFile={archive}"
    options = spark_session.driver_java_options(tmp_path)
    assert options.startswith("-Dlog4j2.configurationFile=file:") and options.endswith(f"-XX:SharedArchiveFile={archive}")
