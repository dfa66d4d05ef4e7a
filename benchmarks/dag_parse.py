"""How long the scheduler's DAG processor takes to parse each DAG file (goal: under 1 s each).

    python -m benchmarks.dag_parse [--rounds 5]

The DAG files are found as the DAG processor finds them (Airflow's own file discovery over the project's DAG
folder, .airflowignore included), so a new DAG is measured without editing this file; a file that defines no DAG
stops the benchmark. Each file is parsed in a fresh interpreter (as a DAG processor child does, with Airflow itself
already imported), first parse and repeated parses timed; a one-task reference DAG is parsed the same way, side by
side, so the ratio says what the project's files add on top of Airflow's own cost on this machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from deploy.airflow_env import ROOT, airflow_env

REFERENCE = '''
import pendulum
from airflow.sdk import dag, task

@dag(dag_id="reference", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"))
def reference():
    @task
    def one():
        return 1
    one()

reference()
'''

PROBE = '''
import json, sys, time
import airflow.sdk  # Airflow's own import cost is not the DAG file's
from airflow.dag_processing.dagbag import DagBag
times = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    bag = DagBag(dag_folder=sys.argv[1])
    times.append(time.perf_counter() - t)
    assert not bag.import_errors, bag.import_errors
print(json.dumps({"times": times, "dags": sorted(bag.dag_ids)}))
'''

# the DAG processor's discovery: every file of the DAG folder that may hold a DAG, minus .airflowignore
DISCOVER = '''
import json
from airflow.configuration import conf
from airflow.utils.file import list_py_file_paths
print(json.dumps(sorted(list_py_file_paths(conf.get("core", "dags_folder")))))
'''


def _probe(code: str, args: list[str], env: dict[str, str]):
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def dag_files(env: dict[str, str]) -> list[Path]:
    """The files the DAG processor would parse, from the DAG folder `env` configures (the project's dags/)."""
    files = [Path(f) for f in _probe(DISCOVER, [], env)]
    if not files:
        raise SystemExit(f"no DAG file found in {env['AIRFLOW__CORE__DAGS_FOLDER']}")
    return files


def parse(path: Path, rounds: int, env: dict[str, str]) -> tuple[list[float], list[str]]:
    """Parse times of `rounds` parses in one fresh interpreter, and the DAG ids the file defines."""
    out = _probe(PROBE, [str(path), str(rounds)], env)
    return out["times"], out["dags"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.dag_parse", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, **airflow_env(home=Path(tmp) / "airflow", tracking_uri=f"sqlite:///{tmp}/m.db")}
        reference = Path(tmp) / "reference_dag.py"
        reference.write_text(REFERENCE)
        files = [reference, *dag_files(env)]
        results = {f.name: parse(f, args.rounds, env) for f in files}
    empty = [name for name, (_, dags) in results.items() if not dags]
    if empty:
        raise SystemExit(f"no DAG defined in {', '.join(empty)}: not a DAG file, or it failed silently")
    ref_first = results[reference.name][0][0]
    print(f"{'DAG file':<32} {'first parse s':>14} {'median repeat s':>16} {'first / reference':>18}  goal < 1 s"
          f"  DAGs")
    for name, (times, dags) in results.items():
        first, repeat = times[0], statistics.median(times[1:]) if len(times) > 1 else times[0]
        verdict = "" if name == reference.name else ("met" if first < 1.0 else "NOT MET")
        print(f"{name:<32} {first:>14.3f} {repeat:>16.3f} {first / ref_first:>18.2f}  {verdict:<10}  "
              f"{', '.join(dags)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
