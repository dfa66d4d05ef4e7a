"""Java artifacts from Maven Central, resolved once into `.local/jars/<group>/` and used from there without network.

    python -m deploy.jars resolve                 # every group; a no-op when .local already holds the pinned set
    python -m deploy.jars resolve --update-lock   # after changing a coordinate below: rewrite deploy/jars.lock
    python -m deploy.jars classpath spark-kafka   # the jar paths of one group, comma-separated (spark.jars)

Each group is the pinned coordinates of one classpath (`GROUPS`); Maven resolves their dependencies with the machine's
own client and settings (`mvn`, ~/.m2 and its mirrors), so its local repository caches them between runs and clean
clones. The full resolved set, every transitive artifact with its version, is pinned in deploy/jars.lock: a
resolution that yields anything else fails, naming what differs, before a file is copied. A Spark run then lists the
copied files in `spark.jars` rather than `spark.jars.packages`, which would resolve again through Ivy at every start
and needs the network.

Spark's connector declares Spark itself as `provided`, but still brings artifacts PySpark ships in `pyspark/jars`
(Scala, Hadoop's client, compression codecs) at other versions; those are left out of the group, so the driver's
classpath has one copy of each, PySpark's, as `spark-submit --packages` would leave it.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# where the resolved groups live: .local/jars, or $ELASTIC_JARS_DIR (one resolution shared by several checkouts)
DESTINATION = Path(os.environ.get("ELASTIC_JARS_DIR") or ROOT / ".local" / "jars")
LOCK = Path(__file__).resolve().with_name("jars.lock")
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.11.0"

# group -> pinned coordinates (group:artifact:version)
GROUPS: dict[str, tuple[str, ...]] = {
    # Spark's Kafka source and sink, at the version of the pinned PySpark
    "spark-kafka": ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",),
    # a Kafka broker in KRaft mode (kafka.Kafka), with log4j 2 as the binding of its SLF4J 1.7 logging; the project's
    # choice of the 4.1 line: Java 17, and Spark's Kafka client (3.9) speaks to it
    "kafka-broker": ("org.apache.kafka:kafka_2.13:4.1.1",
                     "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3"),
}
# groups whose classpath is added to PySpark's own, which already holds some of what they depend on
ON_SPARK_CLASSPATH = frozenset({"spark-kafka"})


class JarsError(RuntimeError):
    pass


def _pom(coordinates: tuple[str, ...]) -> str:
    dependencies = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in (c.split(":") for c in coordinates))
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>local.elastic</groupId><artifactId>jars</artifactId><version>0</version>"
            f"<packaging>pom</packaging><dependencies>{dependencies}</dependencies></project>")


def _maven_list(coordinates: tuple[str, ...]) -> dict[str, Path]:
    """Resolve with `mvn` (downloading into the local repository what it lacks): coordinate -> file in ~/.m2."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsError("Maven (`mvn`) is not on PATH: install it (Debian: apt-get install maven) to resolve "
                        "the Java artifacts of deploy/jars.py")
    with tempfile.TemporaryDirectory(prefix="elastic-jars-") as scratch:
        pom, listing = Path(scratch, "pom.xml"), Path(scratch, "resolved.txt")
        pom.write_text(_pom(coordinates))
        done = subprocess.run([mvn, "-B", "-q", "-f", str(pom), f"{DEPENDENCY_PLUGIN}:list",
                               "-DincludeScope=runtime", "-DoutputAbsoluteArtifactFilename=true",
                               "-DexcludeTransitive=false", f"-DoutputFile={listing}", "-DappendOutput=false"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise JarsError(f"Maven could not resolve {', '.join(coordinates)}:\n{(done.stdout + done.stderr)[-3000:]}")
        resolved = {}
        # lines: "   group:artifact:jar:version:scope:/path/file.jar -- module name" (a classifier adds a field
        # after jar; the module part is there for a jar that names its Java module)
        for line in listing.read_text().splitlines():
            fields = line.split(" -- ")[0].strip().split(":")
            if len(fields) < 6 or not fields[-1].endswith(".jar"):
                continue
            group, artifact, version = fields[0], fields[1], fields[-3]
            resolved[f"{group}:{artifact}:{version}"] = Path(fields[-1])
    return resolved


def _pyspark_jar_names() -> set[str]:
    import pyspark

    return {p.name for p in (Path(pyspark.__file__).resolve().parent / "jars").glob("*.jar")}


def _shipped_by_pyspark(coordinate: str, pyspark_jars: set[str]) -> bool:
    artifact = coordinate.split(":")[1]
    return any(re.fullmatch(re.escape(artifact) + r"-\d[\w.\-]*\.jar", name) for name in pyspark_jars)


def read_lock(path: Path | None = None) -> dict[str, list[str]]:
    path = path or LOCK
    groups: dict[str, list[str]] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or parts[1].count(":") != 2:
            raise JarsError(f"{path}:{number}: expected '<group> <groupId:artifactId:version>', got {line!r}")
        groups.setdefault(parts[0], []).append(parts[1])
    return groups


def write_lock(resolved: dict[str, list[str]], path: Path | None = None) -> None:
    path = path or LOCK
    lines = ["# The resolved Java artifacts of each group in deploy/jars.py, transitive ones included: what",
             "# `python -m deploy.jars resolve` must find. Regenerate with `python -m deploy.jars resolve --update-lock`."]
    for group in sorted(resolved):
        lines += [f"{group} {c}" for c in sorted(resolved[group])]
    path.write_text("\n".join(lines) + "\n")


def _stamp(group: str, wanted: list[str]) -> str:
    return hashlib.sha256("\n".join([group, *GROUPS[group], *sorted(wanted)]).encode()).hexdigest()[:16]


def resolve(update_lock: bool = False, destination: Path = DESTINATION) -> dict[str, list[Path]]:
    """Copy every group's pinned set into destination/<group>/; skips a group whose copy is already complete."""
    locked = {} if update_lock else read_lock()
    pyspark_jars = _pyspark_jar_names()
    result, new_lock = {}, {}
    for group, coordinates in GROUPS.items():
        folder = destination / group
        stamp = folder / ".resolved"
        if not update_lock and stamp.exists() and stamp.read_text() == _stamp(group, locked.get(group, [])):
            result[group] = sorted(folder.glob("*.jar"))
            new_lock[group] = locked[group]
            continue
        files = _maven_list(coordinates)
        if group in ON_SPARK_CLASSPATH:
            files = {c: f for c, f in files.items() if not _shipped_by_pyspark(c, pyspark_jars)}
        if not update_lock:
            want, got = set(locked.get(group, [])), set(files)
            if want != got:
                raise JarsError(f"{LOCK}: group {group} resolved to a set other than the lock's: "
                                f"not in the lock {sorted(got - want)}, missing {sorted(want - got)}; after a "
                                f"deliberate change of deploy/jars.py run `python -m deploy.jars resolve --update-lock`")
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for path in files.values():
            shutil.copy2(path, partial / path.name)
        (partial / ".resolved").write_text(_stamp(group, sorted(files)))
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        result[group] = sorted(folder.glob("*.jar"))
        new_lock[group] = sorted(files)
    if update_lock:
        write_lock(new_lock)
    return result


def classpath(group: str, destination: Path = DESTINATION) -> list[Path]:
    """The resolved jars of `group`; a clear error where they were never resolved (no network is tried)."""
    if group not in GROUPS:
        raise JarsError(f"unknown jar group {group!r}; known: {', '.join(GROUPS)}")
    folder = destination / group
    jars = sorted(folder.glob("*.jar")) if (folder / ".resolved").exists() else []
    if not jars:
        raise JarsError(f"the Java artifacts of {group!r} are not in {folder}: run `make services` "
                        f"(or `python -m deploy.jars resolve`) once, with Maven and the network")
    return jars


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.jars", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    res = sub.add_parser("resolve", help="resolve every group into .local/jars (a no-op when done)")
    res.add_argument("--update-lock", action="store_true", help="accept what Maven resolves and rewrite the lock")
    cp = sub.add_parser("classpath", help="print a group's jars, comma-separated")
    cp.add_argument("group", choices=sorted(GROUPS))
    args = parser.parse_args(argv)
    try:
        if args.action == "resolve":
            for group, jars in resolve(args.update_lock).items():
                print(f"{group}: {len(jars)} jars in {DESTINATION / group}")
        else:
            print(",".join(str(p) for p in classpath(args.group)))
    except JarsError as exc:
        print(f"deploy.jars: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
