"""A class-data-sharing (CDS) archive of the classes a Spark driver loads, so that a run's JVM maps them from one file
instead of reading, verifying and linking some 16,000 classes from PySpark's jars at every start.

Why: on 2 cores a short run's fixed cost is mostly its driver JVM starting. A 4-s run of the job kept the machine
busy for 20.6 CPU-seconds with the archive against 26.3 without, and took 23.9 s against 28.3 (medians of 3
alternating rounds, JIT at C1 as `make test` runs Spark; `python -m benchmarks.jvm_start`, docs/benchmarks.md).
Every run and every Spark test pays that start. The archive only
changes where the JVM gets its classes from, not what a run does; a JVM that cannot use it (another JDK or PySpark
than the archive was built for, another classpath) loads its classes as usual and says nothing (`-Xshare:auto`, the
JVM's default).

How it is built: one short run of the job itself (`python -m jobs.run`, static controller, 4 s, in a temporary
folder with its own MLflow store) with `-XX:ArchiveClassesAtExit`: as its driver JVM exits it writes the classes it
loaded to the archive (a dynamic archive, on top of the JDK's own). The archive's name carries a hash of the Java
version and of PySpark's jars, so another JDK or PySpark builds its own. Before it is kept, a JVM must map it
(`-Xshare:on`, which refuses to start otherwise) on the classpath Spark's launcher gave that run (printed with
SPARK_PRINT_LAUNCH_COMMAND).

`python -m jobs.jvm_archive` builds the archive if there is none and prints the JVM options that use it, for
SPARK_SUBMIT_OPTS; `make setup` builds it, and every Spark driver the project starts in-process maps it once it
exists (`built_options`, read by jobs.spark_session). Where none can be built (no Java, a classpath with a space) it prints
nothing and says why on stderr: runs then start as they always did. A new archive replaces the ones built for a
JDK or PySpark no longer installed (each is about 165 MB).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jobs.recording.machine import java_binary
from jobs.recording.recorder import LOCAL_STATE, REPO_ROOT

DEFAULT_DIR = LOCAL_STATE / "jvm"
LAUNCH_PREFIX = "Spark Command: "
MAIN_CLASS = "org.apache.spark.deploy.SparkSubmit"


class ArchiveUnavailable(RuntimeError):
    """No archive can be built here; the message says why."""


def archive_key(java_version: str, jar_names: list[str]) -> str:
    """What an archive is valid for: one JDK build and one set of PySpark jars (a changed pin changes the jars)."""
    digest = hashlib.sha256(java_version.encode())
    for name in sorted(jar_names):
        digest.update(b"\0" + name.encode())
    return digest.hexdigest()[:16]


def archive_path(folder: Path = DEFAULT_DIR) -> Path:
    folder = folder.resolve()
    if any(c.isspace() for c in str(folder)):  # SPARK_SUBMIT_OPTS is split at spaces: the option would break the JVM
        raise ArchiveUnavailable(f"its folder has a space in its path ({folder}): give --folder a path without one")
    java = java_binary()
    if java is None or not Path(java).exists():
        raise ArchiveUnavailable("no java found (JAVA_HOME or PATH): Spark cannot run here either")
    version = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    import pyspark

    jars = [p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")]
    return folder / f"spark-driver-{archive_key(version, jars)}.jsa"


def built_options(folder: Path = DEFAULT_DIR) -> str:
    """The JVM options that map this JDK's and PySpark's archive where one was built (`make setup` builds it), else
    "": what every Spark driver this project starts adds to its options (jobs.spark_session). Never builds."""
    try:
        archive = archive_path(folder)
    except (ArchiveUnavailable, subprocess.TimeoutExpired, OSError):
        return ""
    return jvm_options(archive) if archive.exists() else ""


def jvm_options(archive: Path) -> str:
    return f"-XX:SharedArchiveFile={archive}"


def classpath_options(launch_command: str) -> list[str]:
    """The options a JVM needs to map the archive, from the launch command Spark printed: its classpath (an archive
    is valid only for a run whose classpath starts with the one it was written on) and the modules it adds.

    The launcher prints the command's words joined by spaces, unquoted: a classpath with a space cannot be read back,
    so it is refused rather than guessed."""
    words = launch_command.split(LAUNCH_PREFIX, 1)[-1].split()
    if MAIN_CLASS not in words:
        raise ArchiveUnavailable(f"Spark's launch command does not start {MAIN_CLASS}: {launch_command[:200]}")
    words = words[:words.index(MAIN_CLASS)]
    if "-cp" not in words or words.index("-cp") + 1 >= len(words):
        raise ArchiveUnavailable(f"no -cp in Spark's launch command: {launch_command[:200]}")
    classpath = words[words.index("-cp") + 1]
    if [w for w in words[1:] if not w.startswith("-") and w != classpath]:
        raise ArchiveUnavailable("Spark's classpath has a space in it; the printed launch command cannot be split")
    return ["-cp", classpath, *(w for w in words if w.startswith("--add-modules"))]


def short_run(folder: Path, experiment: str) -> list[str]:
    """The command of a 4-s run of the job (static controller, the `constant` workload) with its own MLflow store and
    output in `folder`: what the archive is built from, and what benchmarks.jvm_start times."""
    return [sys.executable, "-m", "jobs.run", "--controller", "static", "--workload", "constant", "--duration", "4",
            "--quiet", "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}", "--experiment", experiment,
            "--output-dir", str(folder / "job")]


def build(archive: Path, timeout_s: float = 600) -> Path:
    """Run the job for 4 s with the JVM writing the classes it loaded to the archive as it exits (a dynamic archive,
    on top of the JDK's own), to a temporary name kept only once a JVM has mapped it."""
    java = java_binary()
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(archive.name + ".partial")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="jvm-archive-") as tmp:
        folder = Path(tmp)
        opts = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:ArchiveClassesAtExit={partial}".strip()
        env = {**os.environ, "SPARK_PRINT_LAUNCH_COMMAND": "1", "SPARK_SUBMIT_OPTS": opts}
        cmd = short_run(folder, "jvm-archive")
        # its own process group: the driver JVM writes the archive after the job's Python has exited, and is done
        # when the group is empty
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            _, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            partial.unlink(missing_ok=True)
            raise ArchiveUnavailable(f"the run that loads the driver's classes took over {timeout_s:g} s; stopped")
        try:
            wait_for_group(proc.pid, timeout_s)
        except ArchiveUnavailable:
            partial.unlink(missing_ok=True)
            raise
    launch = [line for line in err.splitlines() if line.startswith(LAUNCH_PREFIX)]
    if proc.returncode != 0 or not launch:
        partial.unlink(missing_ok=True)
        raise ArchiveUnavailable(f"the run that loads the driver's classes failed: {err[-1500:]}")
    check = subprocess.run([java, "-Xshare:on", jvm_options(partial), *classpath_options(launch[0]),
                            "-version"], capture_output=True, text=True, timeout=60)
    if check.returncode != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        raise ArchiveUnavailable(f"the JVM wrote no archive it can map: {(check.stdout + check.stderr)[-1500:]}")
    partial.rename(archive)
    for older in archive.parent.glob("spark-driver-*.jsa"):  # built for a JDK or PySpark no longer installed
        if older != archive:
            older.unlink()
    return archive


def wait_for_group(pgid: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(pgid, signal.SIGKILL)
    raise ArchiveUnavailable(f"the driver JVM was still writing the archive after {timeout_s:g} s; stopped")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jobs.jvm_archive", description=__doc__.split("\n\n")[0])
    p.add_argument("--folder", type=Path, default=DEFAULT_DIR, help="where archives are kept (default: .local/jvm)")
    args = p.parse_args(argv)
    try:
        archive = archive_path(args.folder)
        if not archive.exists():
            print(f"jvm_archive: building {archive} (one 4-s run of the job: about 40 s)", file=sys.stderr)
            build(archive)
    except (ArchiveUnavailable, subprocess.TimeoutExpired, OSError) as e:
        print(f"jvm_archive: no archive, runs start without one: {e}", file=sys.stderr)
        return 0
    print(jvm_options(archive))
    return 0


if __name__ == "__main__":
    sys.exit(main())
