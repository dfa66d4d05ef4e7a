"""The machine a suite ran on, as tags on its parent run and as one line read back from them.

Why: figures from a 2-core laptop and from a cluster are different measurements; a page, a goal read-out or a record
of runs must say which machine produced them without anyone typing it. Every suite's parent run (analysis.suite
.open_parent) is tagged when it opens; its child runs run on that machine, one after another.
"""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

MACHINE_KEYS = ("machine.cpus", "machine.cpu_model", "machine.memory_gib", "machine.os", "machine.python",
                "machine.spark", "machine.java")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return f"{line.split('=', 1)[1].strip().strip(chr(34))}, {platform.system()} {platform.release()}"
    except OSError:
        pass
    return platform.platform()


def java_binary() -> str | None:
    """The java Spark's launcher runs (bin/spark-class): $JAVA_HOME/bin/java when JAVA_HOME is set (whether or not it
    is there), else java on the PATH; None when neither names one."""
    java_home = os.environ.get("JAVA_HOME")
    return str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")


def _java_version() -> str:
    java = java_binary() or "java"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
        first = (out.stderr or out.stdout).strip().splitlines()
        return first[0].replace('"', "") if first else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def machine_tags() -> dict[str, str]:
    """This machine, as tags for a suite's parent run (its child runs run here, one after another)."""
    import psutil
    import pyspark

    from jobs.recording.recorder import git_revision

    return {"machine.cpus": str(os.cpu_count() or 0), "machine.cpu_model": _cpu_model(),
            "machine.memory_gib": f"{psutil.virtual_memory().total / 2 ** 30:.1f}", "machine.os": _os_name(),
            "machine.python": platform.python_version(), "machine.spark": pyspark.__version__,
            "machine.java": _java_version(), "machine.load_1min": f"{os.getloadavg()[0]:.1f}",
            "code.revision": git_revision()}


def describe_machine(tags: dict[str, str], spark_param: str | None = None) -> str:
    """'2 cores (CPU), 23.4 GiB RAM, OS, Python 3.11.9, Spark 4.2.0, Java ...' from the machine.* tags; what a
    suite did not record is said to be missing (the Spark version then comes from its runs' spark.version)."""
    spark = tags.get("machine.spark") or spark_param
    if not any(k in tags for k in MACHINE_KEYS):
        return (f"machine not recorded (suite run before studies recorded it); Spark {spark}" if spark
                else "machine not recorded (suite run before studies recorded it)")
    cpus = f"{tags.get('machine.cpus', '?')} cores"
    if tags.get("machine.cpu_model"):
        cpus += f" ({tags['machine.cpu_model']})"
    parts = [cpus, f"{tags.get('machine.memory_gib', '?')} GiB RAM", tags.get("machine.os", "OS not recorded"),
             f"Python {tags.get('machine.python', '?')}", f"Spark {spark or '?'}"]
    if tags.get("machine.java"):
        parts.append(tags["machine.java"])
    return ", ".join(parts)
