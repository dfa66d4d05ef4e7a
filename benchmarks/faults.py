"""The fault-injection suite: each fault started for real, its outcome checked against the project's promise, and a
table of what the user saw. docs/reliability.md is written from its output.

    python -m benchmarks.faults                      # every case, prints the table
    python -m benchmarks.faults --out docs/reliability.md

    python -m benchmarks.faults --tier cheap         # seconds: no streaming run (what `make test` runs)

The cheap tier (this module) needs no Spark run: an unreachable tracking store (MLflow server, database server,
SQLite folder), a recording process killed with SIGKILL, the local stack's processes that outlive their leader, two
promotions racing, and the bad-input catalogue below, each through the command a user types (`python -m jobs.run`,
`python -m analysis.promote`, the local stack's stop). The streaming tier (benchmarks/faults_streaming.py) injects
faults into real runs on Spark and into a DAG run. The cheap cases run in `make test`
(tests/benchmarks/test_faults.py) through the same functions.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from jobs.recording.recorder import REPO_ROOT

MAX_LINES = 5  # the promise: the user-facing explanation of a fault takes at most this many console lines


@dataclass(frozen=True)
class Outcome:
    case: str
    promise: str
    held: bool
    exit_code: int | None
    lines: int  # console lines the user saw
    explanation: str  # the line that explains it
    runs: str  # MLflow runs involved and their status
    took_s: float
    skipped: str = ""  # why the case could not run here (its means are missing); never counted as held


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _job(args: list[str], timeout_s: float = 120.0, env: dict[str, str] | None = None
         ) -> tuple[int, list[str], float]:
    """`python -m jobs.run ARGS` as a user runs it: (exit code, every console line, seconds)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "jobs.run", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=timeout_s, env={**os.environ, **(env or {})})
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return done.returncode, lines, time.monotonic() - started


def _store_down(case: str, uri: Callable[[Path], str]) -> Callable[[Path], Outcome]:
    def run(scratch: Path) -> Outcome:
        code, lines, took = _job(["--controller", "static", "--tracking-uri", uri(scratch),
                                  "--output-dir", str(scratch / "job")])
        held = code == 4 and 1 <= len(lines) <= MAX_LINES and not (scratch / "job").exists()
        return Outcome(case, "found before anything starts, one line, exit 4", held, code, len(lines),
                       lines[-1] if lines else "", "none created", took)
    return run


def _sqlite_blocked(scratch: Path) -> str:
    blocker = scratch / "a-file"
    blocker.write_text("not a folder")
    return f"sqlite:///{blocker / 'mlflow.db'}"


RECORDING_PROCESS = """
import sys, time
from jobs.recording.recorder import RunRecorder
recorder = RunRecorder(sys.argv[1], "faults", "killed-process", tags={"controller": "static"}, heartbeat_s=0.2)
print(recorder.run_id, flush=True)
time.sleep(600)
"""


def killed_process(scratch: Path) -> Outcome:
    """A run's process SIGKILLed (an OOM kill, a lost worker): the next reader marks it KILLED with the reason.
    The reader is given a 1 s staleness here instead of the default 120 s, so the case does not wait two minutes."""
    from mlflow.tracking import MlflowClient

    from jobs.recording.liveness import reap_dead_runs

    started = time.monotonic()
    uri = f"sqlite:///{scratch / 'mlflow.db'}"
    proc = subprocess.Popen([sys.executable, "-c", RECORDING_PROCESS, uri], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            text=True)
    run_id = proc.stdout.readline().strip()
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    client = MlflowClient(uri)
    before = client.get_run(run_id).info.status
    time.sleep(1.5)
    reap_dead_runs(client, [client.get_experiment_by_name("faults").experiment_id], stale_after_s=1.0)
    after = client.get_run(run_id)
    reason = after.data.tags.get("failure_reason", "")
    return Outcome("recording process killed (SIGKILL)", "marked KILLED with the reason by the next reader",
                   before == "RUNNING" and after.info.status == "KILLED" and "killed or lost" in reason, -9, 0,
                   reason, f"1 run: {before} -> {after.info.status}", time.monotonic() - started)


# The leader's SIGINT handler is installed before it says it is ready: a SIGINT sent the moment its pids are read
# would otherwise find the interpreter's disposition, which is "ignore" when the process that started it ignores
# SIGINT (a pytest-xdist worker does) — the leader then slept on, and a test waiting 10 s for it failed under load.
STUBBORN_TREE = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGINT, lambda *a: os._exit(0))
child = "import signal, time\\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\nprint('ready', flush=True)\\ntime.sleep(600)"
kids = [subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True) for _ in range(3)]
for k in kids:
    k.stdout.readline()
print(" ".join(str(k.pid) for k in kids), flush=True)
time.sleep(600)
"""


def stack_leftovers(scratch: Path) -> Outcome:
    """`make airflow-stop` on a process tree like Airflow standalone's: the leader exits on SIGINT, its children
    ignore SIGINT and SIGTERM."""
    import psutil

    from deploy import local_stack

    started = time.monotonic()
    leader = subprocess.Popen([sys.executable, "-c", STUBBORN_TREE], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    children = [int(pid) for pid in leader.stdout.readline().split()]
    saved, local_stack.STACK = local_stack.STACK, scratch
    (scratch / "airflow.pid").write_text(str(leader.pid))
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = local_stack.stop(escalation=((signal.SIGINT, 2.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)))
        leader.wait(timeout=10)
    finally:
        local_stack.STACK = saved
    left = [p for p in children if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    for pid in left:
        psutil.Process(pid).kill()
    lines = out.getvalue().strip().splitlines()
    return Outcome("local stack: children outlive the leader", "stop ends every process it started and says so",
                   code == 0 and not left, code, len(lines), lines[-1] if lines else "", "none involved",
                   time.monotonic() - started)


def promotion_race(scratch: Path) -> Outcome:
    """Two DAG runs promoting at the same moment: their `promote` tasks run `python -m analysis.promote` on the same
    store, each for a suite whose winner beats the champion. One must promote, the other must see the new champion
    and keep it; one champion, no version half-made, no lock left."""
    from mlflow.tracking import MlflowClient

    from analysis.promote import LOCK_SUFFIX, promote_suite
    from benchmarks.fabricated_suites import CHEAP, DEAR, record_suite
    from jobs.champion import CHAMPION_ALIAS, model_name

    started = time.monotonic()
    uri = f"sqlite:///{scratch / 'mlflow.db'}"
    MlflowClient(uri).create_experiment("promo", artifact_location=(scratch / "art").as_uri())
    with contextlib.redirect_stdout(io.StringIO()):
        promote_suite(uri, record_suite(uri, [DEAR]))  # the champion to beat
    a, b = record_suite(uri, [CHEAP, DEAR]), record_suite(uri, [CHEAP, DEAR])
    cmd = [sys.executable, "-m", "analysis.promote", "--tracking-uri", uri, "--parent-run-id"]
    procs = [subprocess.Popen(cmd + [p], cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in (a, b)]
    outputs = [p.communicate(timeout=300) for p in procs]
    said = sorted(out.strip() for out, _ in outputs)
    client, model = MlflowClient(uri), model_name("step")
    versions = client.search_model_versions(f"name = '{model}'")
    champion = client.get_model_version_by_alias(model, CHAMPION_ALIAS)
    lock_left = bool(client.search_registered_models(f"name = '{model}{LOCK_SUFFIX}'"))
    held = ([p.returncode for p in procs] == [0, 0] and len(versions) == 2 and str(champion.version) == "2"
            and said[0].startswith("step: PROMOTE") and said[1].startswith("step: keep") and not lock_left)
    lines = [line for out, err in outputs for line in (out + err).splitlines() if line.strip()]
    return Outcome("two promotions racing (two DAG runs' promote tasks)", "one promotes, the other keeps the new "
                   "champion; one champion, no lock left", held, max(p.returncode for p in procs), len(lines),
                   " / ".join(line[:90] for line in said), f"{len(versions)} versions, champion v{champion.version}, "
                   f"lock {'LEFT' if lock_left else 'released'}", time.monotonic() - started)


# Bad input through `python -m jobs.run`: (what, arguments, files to write first {name: text}, words the line names)
BAD_INPUTS: tuple[tuple[str, list[str], dict[str, str], tuple[str, ...]], ...] = (
    ("unknown controller", ["--controller", "nonesuch"], {}, ("nonesuch",)),
    ("unknown parameter", ["--controller", "threshold", "--param", "cooldown=3"], {}, ("cooldown",)),
    ("negative parameter", ["--controller", "threshold", "--param", "scale_up_ratio=-1"], {}, ("scale_up_ratio",)),
    ("parameter without a value", ["--controller", "static", "--param", "degree"], {}, ("degree",)),
    ("no controller", ["--param", "degree=2"], {}, ("controller",)),
    ("zero duration", ["--controller", "static", "--duration", "0"], {}, ("duration_s",)),
    ("SLO target above 1", ["--controller", "static", "--slo-target", "1.5"], {}, ("--slo-target",)),
    ("zero trigger", ["--controller", "static", "--trigger", "0"], {}, ("--trigger",)),
    ("zero max degree", ["--controller", "static", "--max-degree", "0"], {}, ("--max-degree",)),
    ("negative seed", ["--controller", "static", "--seed", "-1"], {}, ("seed",)),
    ("malformed master", ["--controller", "static", "--master", "locl[2]"], {}, ("locl[2]",)),
    ("unreachable master", ["--controller", "static", "--master", "spark://127.0.0.1:1"], {}, ("127.0.0.1:1",)),
    ("executor controller on a local master", ["--controller", "spark-dynamic-allocation"], {}, ("cluster master",)),
    ("host scaling for a controller without executors",
     ["--controller", "static", "--master", "spark://127.0.0.1:1", "--host-scaling"], {}, ("--host-scaling",)),
    ("AUTOSCALE period shorter than the trigger", ["--controller", "autoscale", "--param", "period_s=1"], {},
     ("period_s",)),
    ("AUTOSCALE thresholds inverted", ["--controller", "autoscale", "--param", "theta_min=0.9"], {}, ("theta_min",)),
    ("guard band outside (0, 1)",
     ["--controller", "ds2", "--param", "guards=on", "--param", "utilization_band=1.5"], {}, ("utilization_band",)),
    ("missing workload file", ["--controller", "static", "--workload", "{dir}/nope.yaml"], {}, ("nope.yaml",)),
    ("workload not valid YAML", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "profile: constant\nparams:\n  rate: [1, 2\nduration_s: 4\n"}, ("w.yaml", "line")),
    ("unknown workload profile", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "name: x\nprofile: nope\nduration_s: 10\n"}, ("w.yaml", "line 2", "nope")),
    ("negative rate", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "name: x\nprofile: constant\nparams: {rate: -5}\nduration_s: 10\n"}, ("w.yaml", "line 3", "rate")),
    ("unknown workload field", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "name: x\nprofile: constant\nparams: {rate: 5}\nduration_s: 10\ncolour: red\n"},
     ("w.yaml", "line 5", "colour")),
    ("bad rate in the second stream", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "name: x\nstreams:\n  - {profile: constant, params: {rate: 5}}\n  - profile: constant\n"
                "    params: {rate: -2}\nduration_s: 10\n"}, ("w.yaml", "line 5", "streams[1]", "rate")),
    ("noise without sigma", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "name: x\nprofile: constant\nparams: {rate: 5}\nduration_s: 10\nnoise: {step_s: 1}\n"},
     ("w.yaml", "line 5", "sigma")),
    ("missing duration", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "name: x\nprofile: constant\nparams: {rate: 5}\n"}, ("w.yaml", "duration_s")),
    ("missing trace file", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "name: x\ntrace: {path: {dir}/absent.csv}\nduration_s: 10\n"}, ("absent.csv",)),
    ("trace with a bad row", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "name: x\ntrace: {path: {dir}/rate.csv}\nduration_s: 2\n",
      "rate.csv": "t_seconds,events\n0,10\n1,ten\n2,10\n3,10\n"}, ("rate.csv:3", "ten")),
    ("trace with a negative count", ["--controller", "static", "--workload", "{dir}/w.yaml"],
     {"w.yaml": "name: x\ntrace: {path: {dir}/rate.csv}\nduration_s: 2\n",
      "rate.csv": "t_seconds,events\n0,10\n1,-4\n2,10\n3,10\n"}, ("rate.csv:3",)),
    ("unknown operator kind", ["--controller", "static", "--topology", "{dir}/t.yaml"],
     {"t.yaml": "operators:\n  - {name: a, kind: teleport}\n"}, ("t.yaml", "kind", "teleport")),
    ("topology not valid YAML", ["--controller", "static", "--topology", "{dir}/t.yaml"],
     {"t.yaml": "operators: [\n"}, ("t.yaml", "line")),
    ("missing topology file", ["--controller", "static", "--topology", "{dir}/absent.yaml"], {}, ("absent.yaml",)),
    ("unknown catalogue policy", ["--policy", "seep-t9"], {}, ("seep-t9",)),
    ("policy rule without a condition",
     ["--policy", "{rules: [{operator: enrich, action: scale-out, by: {absolute: 1}}]}"], {}, ("line 1", "when")),
    ("policy duration that is not one", ["--policy", "{dir}/p.yaml"],
     {"p.yaml": "rules:\n  - name: drain\n    operator: enrich\n    action: scale-in\n    by: {absolute: 1}\n"
                "    when: {metric: queue-length, below: 1, for_at_least: soon}\n"}, ("p.yaml", "line 6", "soon")),
    ("policy with a Python object tag", ["--policy", "{dir}/p.yaml"],
     {"p.yaml": "rules:\n  - name: r\n    operator: !!python/object/apply:os.system [echo hi]\n"}, ("p.yaml",)),
    ("policy for another controller", ["--controller", "static", "--policy", "seep-t5"], {}, ("--policy",)),
    ("controller config that is not a mapping", ["--controller-config", "{dir}/c.yaml"],
     {"c.yaml": "- static\n"}, ("c.yaml",)),
    ("controller config with an unknown parameter", ["--controller-config", "{dir}/c.yaml"],
     {"c.yaml": "controller: static\nparams: {degre: 2}\n"}, ("degre",)),
    ("output folder inside a file", ["--controller", "static", "--output-dir", "{dir}/f/job"],
     {"f": "a file"}, ("--output-dir",)),
    ("output folder holding a user's files", ["--controller", "static", "--output-dir", "{dir}"],
     {"notes.txt": "my notes"}, ("--output-dir", "not a run's output")),
    ("Kafka broker unreachable at start",
     ["--controller", "static", "--source", "kafka", "--kafka-bootstrap", "127.0.0.1:1"], {},
     ("--kafka-bootstrap 127.0.0.1:1", "elastic kafka start")),
    ("a native query on Kafka", ["--controller", "static", "--source", "kafka", "--spark-query",
                                 "native:windowed_count"], {}, ("--source kafka", "--spark-query")),
    ("Spark's Kafka connector missing", ["--controller", "static", "--source", "kafka"], {"jars/.keep": ""},
     ("Kafka connector", "make services")),
)
# bad inputs that need an environment of their own: the jars looked for in an empty folder
BAD_INPUT_ENV = {"Spark's Kafka connector missing": {"ELASTIC_JARS_DIR": "{dir}/jars"}}


def bad_input(what: str, args: list[str], files: dict[str, str], names: tuple[str, ...],
              scratch: Path) -> Outcome:
    """One bad input, as a user types it: exit 2, one line naming what is wrong, nothing recorded."""
    folder = scratch / "input"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text.replace("{dir}", str(folder)))
    store = scratch / "mlflow.db"
    env = {k: v.replace("{dir}", str(folder)) for k, v in BAD_INPUT_ENV.get(what, {}).items()}
    code, lines, took = _job([a.replace("{dir}", str(folder)) for a in args]
                             + ["--tracking-uri", f"sqlite:///{store}"], env=env)
    line = lines[-1] if lines else ""
    held = (code == 2 and len(lines) == 1 and line.startswith("error: ") and "Traceback" not in line
            and all(n in line for n in names) and not store.exists())
    return Outcome(f"bad input: {what}", "exit 2, one line naming it, nothing recorded", held, code, len(lines), line,
                   "none created" if not store.exists() else "a store was created", took)


def cases() -> list[tuple[str, Callable[[Path], Outcome]]]:
    return [
        ("MLflow server down at start",
         _store_down("MLflow server down at start", lambda d: f"http://127.0.0.1:{closed_port()}")),
        ("PostgreSQL tracking store down at start",
         _store_down("PostgreSQL tracking store down at start",
                     lambda d: f"postgresql+psycopg2://mlflow:secret@127.0.0.1:{closed_port()}/mlflow")),
        ("SQLite store where no folder can be made",
         _store_down("SQLite store where no folder can be made", _sqlite_blocked)),
        ("recording process killed (SIGKILL)", killed_process),
        ("local stack: children outlive the leader", stack_leftovers),
        ("two promotions racing (two DAG runs' promote tasks)", promotion_race),
        *[(f"bad input: {b[0]}", lambda d, b=b: bad_input(*b, d)) for b in BAD_INPUTS],
    ]


TIERS = ("cheap", "streaming", "all")


def tier_cases(tier: str) -> list[tuple[str, Callable[[Path], Outcome]]]:
    """The cheap tier needs no streaming run (seconds per case, in `make test`); the streaming tier injects faults
    into real runs on Spark (benchmarks/faults_streaming.py, about 20 minutes)."""
    found = []
    if tier in ("cheap", "all"):
        found += cases()
    if tier in ("streaming", "all"):
        from benchmarks import faults_streaming, native_rescale_faults

        found += faults_streaming.cases() + native_rescale_faults.cases()
    return found


def run_all(only: str | None = None, tier: str = "all") -> list[Outcome]:
    outcomes = []
    for name, case in tier_cases(tier):
        if only and only not in name:
            continue
        with tempfile.TemporaryDirectory(prefix="fault-") as scratch:
            outcomes.append(case(Path(scratch)))
        o = outcomes[-1]
        print(f"{'skipped' if o.skipped else 'held' if o.held else 'BROKEN'}  {name}  ({o.took_s:.0f} s)", flush=True)
    return outcomes


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def page(outcomes: list[Outcome], machine: str) -> str:
    skipped = [o for o in outcomes if o.skipped]
    outcomes = [o for o in outcomes if not o.skipped]
    held = sum(o.held for o in outcomes)
    bad = [o for o in outcomes if o.case.startswith("bad input: ")]
    lines = ["# Reliability: faults and bad input, injected for real", "",
             f"Generated by `python -m benchmarks.faults --out docs/reliability.md` (both tiers) on {time.strftime('%Y-%m-%d')} "
             f"({machine}); do not edit by hand. Each fault is started for real through the command a user types "
             "and its outcome is checked against the promise in the second column.", "",
             f"**{held} of {len(outcomes)} cases hold**; {sum(o.held for o in bad)} of {len(bad)} bad inputs are "
             f"rejected with exit 2 and one line naming the field, file and line where there is one.", "",
             "Two tiers: `--tier cheap` needs no streaming run (seconds per case; `make test` runs it, "
             "tests/benchmarks/test_faults.py); `--tier streaming` injects faults into real runs on Spark, one at a "
             "time (benchmarks/faults_streaming.py). Servers a fault stops are the case's own (an MLflow server, a "
             "PostgreSQL from initdb/pg_ctl, a standalone cluster), never the machine's. Lost and duplicated events "
             "of a run that did not reach its end are counted from Spark's own checkpoint (what each committed "
             "batch read) against the committed sink folders. `lines` counts what the fault added to the console "
             "(not the run's usual start, progress and summary lines).", "",
             "## The promises", "",
             "- an unreachable tracking store is found before Spark starts, in one line, exit 4;",
             "- mid-run, a tracking store that goes away (server restarting, database restarting) does not stop "
             "the stream: per-batch metrics wait and are written when it is back (one line each way); if it stays "
             "away past the run's end plus 60 s, the run is tagged `metrics_incomplete` and says how many values "
             "are missing (its summary and artifacts are complete);",
             "- stopping a run (SIGTERM from Airflow, Ctrl-C) stops the stream between two Spark calls: one line, "
             "exit 1, the MLflow run FAILED `stopped by SIGTERM`, committed output exact, no JVM left;",
             "- a run whose process died is marked KILLED with the reason by whoever next reads the runs (or at "
             "once by its Airflow retry, which links both runs: `retry_of` / `retried_by`); such runs are never "
             "compared or promoted;",
             "- an executor or worker lost mid-run loses and duplicates nothing, and the run records the loss;",
             "- a full disk: one line naming the folder, run FAILED, nothing promoted;",
             "- a run never resumes another run's checkpoint; an output folder that is not a run's is refused "
             "(exit 2), never deleted;",
             "- two promotions at once leave one champion and no lock;",
             "- a native query's rescale by restart cut short (the driver killed between stop and start or inside "
             "the repartition, or the repartition failing twice) leaves a checkpoint that a retry resumes, its output "
             "equal to the reference with nothing lost or duplicated (benchmarks/native_rescale_faults.py);",
             "- a run on Kafka: a broker that does not answer, Spark's Kafka connector missing or a native query on "
             "Kafka is refused before anything starts (exit 2, one line); the stream waits out a broker restart and "
             "loses and duplicates nothing; the run's topic deleted mid-run fails the run in one line, its committed "
             "output exact.", "",
             "| case | promise | holds | exit | lines | the line the user sees | MLflow runs | s |",
             "|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        lines.append(f"| {_cell(o.case)} | {_cell(o.promise)} | {'yes' if o.held else '**no**'} | "
                     f"{'' if o.exit_code is None else o.exit_code} | {o.lines} | `{_cell(o.explanation)[:300]}` | "
                     f"{_cell(o.runs)} | {o.took_s:.1f} |")
    if skipped:
        lines += ["", "## Skipped on this machine", "",
                  *[f"- {o.case}: {o.skipped}" for o in skipped]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.faults", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="write the page here (e.g. docs/reliability.md)")
    p.add_argument("--only", help="run the cases whose name contains this")
    p.add_argument("--tier", choices=TIERS, default="all",
                   help="cheap: no streaming run (seconds); streaming: faults in real Spark runs (about 20 min)")
    args = p.parse_args(argv)
    outcomes = run_all(args.only, args.tier)
    from jobs.recording.machine import describe_machine, machine_tags

    text = page(outcomes, describe_machine(machine_tags()))
    print(text)
    if args.out:
        args.out.write_text(text)
        print(f"written to {args.out}")
    return 0 if all(o.held for o in outcomes if not o.skipped) else 1


if __name__ == "__main__":
    sys.exit(main())
