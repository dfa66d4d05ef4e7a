"""The SEEP thesis' tests on this pipeline (docs/seep.md): T1-T6 in the thesis' setting, and T5 on Spark.

    make reproduce                                 # runs T5 on Spark if the store lacks it, then writes both pages
    python -m studies.seep_timings --run-missing   # the same for this page alone
    python -m studies.seep_timings --run           # run T5's policies on Spark again (2 runs, ~8 min), then the page
    python -m studies.seep_timings                 # the page from the latest Spark runs in MLflow

Three settings side by side, so the effect of micro-batching is visible on its own: the tuple-at-a-time queue model
(the thesis' setting: a reading every 5 s of a queue fed at lambda and served at mu per instance), the micro-batch
plant model (the same, quantised into batches with a 2 s trigger), and the real job on Spark with `enrich` waiting
1/mu per record (topology seep-mu10). The page is generated, never typed: the model rows are computed when it is
written, the Spark rows come from the store's latest finished suite (kind=seep-timings), whose parent run records
when and on what machine they were measured.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from controllers import ControlLoop, build_controller
from simulator.plant import OperatorModel, PlantConfig, simulate
from controllers.policy import load_policy
from studies.seep_queue_model import QueueOperator, simulate_policy
from jobs.recording.recorder import DEFAULT_EXPERIMENT, default_tracking_uri
from studies.provenance import RUN_OVERHEAD_S, date_span, measured_on, minutes, suite_provenance
from workloads import Schedule, load_workload

T5_POLICIES = ("seep-t5", "seep-t5-microbatch")
T5_WORKLOAD, T5_DURATION_S, T5_TOPOLOGY, PEAK_STARTS = "seep-periodic", 180.0, "seep-mu10", (20.0, 80.0, 140.0)
SPARK_RUNS = len(T5_POLICIES)  # one seed each


def estimate_s() -> float:
    """How long the Spark part takes (the model rows take seconds)."""
    return SPARK_RUNS * (T5_DURATION_S + RUN_OVERHEAD_S)

# test, policy, workload, operators (name, mu), what the thesis reports (§5.2.2-5.2.7, pp. 68-78)
THESIS_TESTS = (
    ("T1", "seep-t1", "seep-constant", (("enrich", 5.0),), "queue > 300 at ~60 s; 1 -> 2 at ~92 s; no second action"),
    ("T2", "seep-t2", "seep-constant", (("enrich", 5.0),), "1 -> 3 at ~90 s; the queue then drains"),
    ("T3", "seep-t3", "seep-constant", (("parse", 20.0), ("enrich", 5.0)),
     "only op(2) scales, 1 -> 3 at ~90 s; op(1) never"),
    ("T4", "seep-t4", "seep-random-peaks", (("enrich", 10.0),), "~50 tuples after a 5 s peak; no action"),
    ("T5", "seep-t5", "seep-periodic", (("enrich", 10.0),), "1 -> 3 ~10 s into each peak, 3 -> 1 after the drain"),
    ("T6", "seep-t6", "seep-periodic", (("enrich", 10.0),), "1 -> 3 as T5, then no scale-in for >= 5 min"),
)


@dataclass(frozen=True)
class Timeline:
    """What a setting did with a policy: executed changes of enrich, and when readings were taken."""
    setting: str
    policy: str
    changes: tuple[tuple[float, int, int], ...]  # (time_s, before, after)
    sample_times: tuple[float, ...]
    queue: pd.DataFrame  # time_s, queue (enrich's waiting events), degree

    def first_scale_out_after(self, t: float) -> float | None:
        return next((c[0] - t for c in self.changes if c[0] >= t and c[2] > c[1]), None)

    def summary_row(self) -> str:
        outs = [c for c in self.changes if c[2] > c[1]]
        ins = [c for c in self.changes if c[2] < c[1]]
        delays = [self.first_scale_out_after(p) for p in PEAK_STARTS]
        delays_text = ", ".join("–" if d is None or d > 60 else f"{d:.0f} s" for d in delays)
        gaps = pd.Series(self.sample_times).diff().dropna()
        listing = ", ".join(f"{t:.0f} s {a}->{b}" for t, a, b in self.changes) or "none"
        return (f"| {self.setting} | `{self.policy}` | {listing} | {len(outs)} / {len(ins)} | {delays_text} | "
                f"{gaps.mean():.1f} s (max {gaps.max():.1f} s) |")


def thesis_rows() -> list[str]:
    rows = []
    for test, policy, workload, ops, expected in THESIS_TESTS:
        duration = 400.0 if test == "T6" else 300.0
        schedule = Schedule(load_workload(workload).with_overrides(duration_s=duration))
        run = simulate_policy([QueueOperator(n, mu) for n, mu in ops], schedule, load_policy(policy), duration)
        target = ops[-1][0]
        threshold = load_policy(policy).rules[-1 if test == "T3" else 0].triggers[0].value
        crossed = run.first_time_queue_above(target, threshold)
        acts = ", ".join(f"{a.time_s:.0f} s {a.operator} {a.old_size}->{a.new_size}" for a in run.executed) or "none"
        blocked = sum(1 for a in run.actions if not a.executed and "floor of 1" not in a.reason)
        rows.append(f"| {test} | `{policy}` on {workload}, mu {', '.join(f'{m:g}' for _, m in ops)} | {expected} | "
                    f"{'never' if crossed is None else f'{crossed:.0f} s'} | {acts} | {blocked} |")
    return rows


def thesis_variant(policy: str) -> str:
    """The thesis' policy alone: without the guard layer the run-time guards add (on by default)."""
    return f"seep-policy:guards=false,policy={policy}"


def _schedule() -> Schedule:
    return Schedule(load_workload(T5_WORKLOAD).with_overrides(duration_s=T5_DURATION_S))


def queue_model_timeline(policy: str) -> Timeline:
    run = simulate_policy([QueueOperator("enrich", 10.0)], _schedule(), load_policy(policy), T5_DURATION_S)
    changes = tuple((a.time_s, a.old_size, a.new_size) for a in run.executed)
    queue = pd.DataFrame({"time_s": run.times, "queue": run.queue["enrich"], "degree": run.sizes["enrich"]})
    return Timeline("queue model (thesis setting)", policy, changes, tuple(run.times), queue)


def plant_timeline(policy: str) -> Timeline:
    config = PlantConfig((OperatorModel("parse", 0.0001), OperatorModel("enrich", 0.1)), trigger_interval_s=2.0,
                         slots=4, batch_overhead_s=0.05, max_degree=8)
    controller = build_controller("seep-policy", {"policy": policy, "guards": False}, ("parse", "enrich"), 8)
    run = simulate(config, _schedule(), ControlLoop(controller), T5_DURATION_S)
    decisions = [d.to_dict() for d in run.decisions]
    queue = pd.DataFrame({"time_s": [b.snapshot.time_s for b in run.batches],
                          "queue": [b.snapshot.backlog for b in run.batches],
                          "degree": [b.snapshot.degrees["enrich"] for b in run.batches]})
    return _from_decisions("micro-batch plant (2 s trigger)", policy, decisions, queue)


def _from_decisions(setting: str, policy: str, decisions: list[dict], queue: pd.DataFrame) -> Timeline:
    changes = tuple((d["time_s"], d["before"]["enrich"], d["after"]["enrich"]) for d in decisions
                    if d["changed"] and d["before"]["enrich"] != d["after"]["enrich"])
    samples = tuple(d["time_s"] for d in decisions if d["reason"] != "between samples")
    return Timeline(setting, policy, changes, samples, queue)


def latest_spark_suite(tracking_uri: str, experiment: str) -> str | None:
    """The parent run of the latest finished T5 suite on Spark in the store, or None."""
    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    parents = client.search_runs([found.experiment_id], "tags.kind = 'seep-timings' and attributes.status = "
                                 "'FINISHED'", order_by=["attributes.start_time DESC"], max_results=1)
    return parents[0].info.run_id if parents else None


def spark_timelines(tracking_uri: str, experiment: str) -> tuple[str | None, list[Timeline]]:
    from analysis.report import run_batches
    from analysis.runs import load_runs

    client = MlflowClient(tracking_uri)
    parent = latest_spark_suite(tracking_uri, experiment)
    if parent is None:
        return None, []
    runs = load_runs(tracking_uri, parent_run_id=parent)
    out = []
    with tempfile.TemporaryDirectory() as scratch:
        for policy in T5_POLICIES:
            # a run from before the guard layer was labelled without `guards=false`: the same configuration
            rows = runs[runs["variant"].isin([thesis_variant(policy), f"seep-policy:policy={policy}"])
                        & (runs["status"] == "FINISHED")]
            if rows.empty:
                continue
            run_id = rows.iloc[0]["run_id"]
            path = client.download_artifacts(run_id, "decisions.jsonl", scratch)
            decisions = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
            batches = run_batches(client, run_id, Path(scratch))
            queue = pd.DataFrame({"time_s": batches["time_s"], "queue": batches["backlog"],
                                  "degree": batches["degree_enrich"]})
            out.append(_from_decisions(f"Spark (local, 2 s trigger, run `{run_id[:8]}`)", policy, decisions, queue))
    return parent, out


def figure(timelines: list[Timeline], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = list(dict.fromkeys(t.setting for t in timelines))
    fig, axes = plt.subplots(2, len(settings), figsize=(4.2 * len(settings), 5.5), sharex=True, squeeze=False,
                             constrained_layout=True)
    for col, setting in enumerate(settings):
        axes[0][col].set_title(setting, fontsize=9)
        for t in (x for x in timelines if x.setting == setting):
            axes[0][col].plot(t.queue["time_s"], t.queue["queue"], label=t.policy)
            axes[1][col].plot(t.queue["time_s"], t.queue["degree"], drawstyle="steps-post", label=t.policy)
        for start in PEAK_STARTS:
            for row in (0, 1):
                axes[row][col].axvspan(start, start + 20, color="0.9")
        axes[1][col].set_xlabel("time (s); grey = peaks of 20 tuples/s")
    axes[0][0].set_ylabel("enrich queue (tuples)")
    axes[1][0].set_ylabel("enrich instances / tasks")
    axes[0][0].legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _delays(timelines: list[Timeline]) -> str:
    """'2-10 s on Spark': the range of first scale-outs into a peak over the timelines of one setting."""
    delays = [d for t in timelines for d in map(t.first_scale_out_after, PEAK_STARTS) if d is not None and d <= 60]
    where = ("on Spark" if timelines[0].setting.startswith("Spark") else
             "in the micro-batch plant" if timelines[0].setting.startswith("micro") else "in the queue model")
    if not delays:
        return f"none within a minute {where}"
    low, high = min(delays), max(delays)
    return f"{low:.0f} s {where}" if round(low) == round(high) else f"{low:.0f}-{high:.0f} s {where}"


def page(tracking_uri: str, experiment: str, figure_path: Path) -> str:
    parent, spark = spark_timelines(tracking_uri, experiment)
    timelines = [f(p) for f in (queue_model_timeline, plant_timeline) for p in T5_POLICIES] + spark
    thesis = [t for t in timelines if t.setting.startswith("queue model")]
    micro = spark or [t for t in timelines if t.setting.startswith("micro-batch plant")]
    if parent is not None:
        source = suite_provenance(MlflowClient(tracking_uri), parent)
        took = f", {minutes(source.wall_s)}" if source.wall_s else ""
        measured = (f"**Measured**: the Spark rows {date_span({'T5 on Spark': [source]})} (UTC date of the suite's "
                    f"runs{took}), on:\n\n{measured_on({'T5 on Spark': [source]})[0]}")
    else:
        measured = ("**Measured**: the Spark rows are not in this MLflow store: `make reproduce` (or "
                    "`python -m studies.seep_timings --run-missing`) runs them.")
    lines = [
        "# The SEEP thesis' tests: T1-T6 in the thesis' setting, and T5 on Spark",
        "",
        f"Generated by `make reproduce` (`python -m studies.seep_timings`, {time.strftime('%Y-%m-%d')}) from the "
        "MLflow store and the models; do not edit by hand. The policies are the catalogue's "
        "(`controllers/policy/catalogue/`), the sources the workload catalogue's `seep-*` entries; readings every "
        "5 s (SEEP's monitorInterval).",
        "",
        f"**Regenerate**: `make reproduce` runs T5's {SPARK_RUNS} Spark runs ({T5_DURATION_S:.0f} s each, about "
        f"{minutes(estimate_s())} on a 2-core machine) if the MLflow store has no finished suite of them "
        "(`make reproduce FORCE=1`: again), then writes this page (and reproduction.md). The queue-model and "
        "micro-batch-plant rows are computed when the page is written (deterministic, seconds).",
        "",
        measured,
        "",
        "## T1-T6 on the tuple-at-a-time queue model",
        "",
        "Each operator is a queue fed at lambda and served at mu per instance (thesis §5.2.1, p. 67); the tests in "
        "`tests/studies/test_seep_thesis.py` assert these rows.",
        "",
        "| test | policy and setting | the thesis reports | queue passed the threshold | executed actions | "
        "blocked firings |",
        "|---|---|---|---|---|---|",
        *thesis_rows(),
        "",
        "Readings come every 5 s; a trigger judges the readings younger than its window. In T1-T3 the queue is "
        "exactly 300 (not above) at 60 s and above from 65 s, so the 30 s window holds only readings above from "
        "90 s on: the action comes at 90 s (the thesis: \"about 92 s\"); the plateau is then 5 x 90 = 450 "
        "tuples.",
        "",
        "## T5 three ways: how micro-batching changes the timings",
        "",
        f"Workload `{T5_WORKLOAD}` ({T5_DURATION_S:.0f} s: peaks of 20 tuples/s at 20-40, 80-100, 140-160 s over "
        "10 tuples/s), mu = 10 tuples/s per instance or task (on Spark: topology `seep-mu10`, enrich waits 100 ms "
        "per record). `seep-t5` is the thesis' policy; `seep-t5-microbatch` the same with scale-in below 25 "
        "instead of below 1.",
        "",
        "| setting | policy | enrich changes (time, before->after) | scale-outs / scale-ins | first scale-out "
        "after each peak starts | interval between readings |",
        "|---|---|---|---|---|---|",
        *(t.summary_row() for t in timelines),
        "",
    ]
    if not spark:
        lines += ["Spark: not run yet in this MLflow store (`python -m studies.seep_timings --run`).", ""]
    else:
        lines += [f"Spark runs: parent `{parent}` in experiment `{experiment}`.", ""]
    lines += [
        "What the rows show (the figures quoted are this page's rows"
        f"{'' if spark else '; the Spark rows are missing, so the micro-batch plant stands for them'}):",
        "",
        "- **Readings only when a batch ends.** A micro-batch engine reports after each batch, so a reading is the "
        "first batch end at or after each 5 s tick. While degree 1 meets a peak, batches grow long (about 10 s "
        "with mu = lambda), readings come that far apart and the 5 s rule can only act at such a reading. The "
        f"first scale-out still comes earlier into each peak than in the thesis' setting ({_delays(micro)} against "
        f"{_delays(thesis)}), because the micro-batch queue is not empty when a peak starts (next two points).",
        "- **A micro-batch queue is never empty when sampled.** The events that arrived while a batch ran wait "
        "for the next one (about lambda x batch time), so `below 1` never holds on Spark and the thesis' T5 "
        "scales out once and stays at 3: the policy must be rewritten for the engine (`seep-t5-microbatch`).",
        "- **Degree 1 at mu = lambda falls behind on its own.** Each batch pays a fixed overhead on top of "
        "lambda/mu of work, so a micro-batch job is slightly under capacity where SEEP's operator was exactly at "
        "it; the queue grows slowly even between peaks.",
        "",
        f"![T5 timelines]({figure_path.parent.name}/{figure_path.name})",
        "",
    ]
    figure(timelines, figure_path)
    return "\n".join(lines)


def run_spark(tracking_uri: str, experiment: str, master: str) -> str:
    from analysis.suite import SuiteRequest, open_parent, run_suite, timestamped

    request = SuiteRequest(tuple(thesis_variant(p) for p in T5_POLICIES), (T5_WORKLOAD,), (1,),
                           duration_s=T5_DURATION_S, topology=T5_TOPOLOGY)
    parent = open_parent(tracking_uri, experiment, timestamped("seep-t5-spark"),
                         {"kind": "seep-timings"},
                         {"variants": " | ".join(request.variants), "topology": T5_TOPOLOGY})
    result = run_suite(parent, request, tracking_uri=tracking_uri, experiment=experiment, master=master)
    MlflowClient(tracking_uri).set_terminated(parent, "FAILED" if result.failed else "FINISHED")
    return parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m studies.seep_timings", description=__doc__.split("\n\n")[0])
    p.add_argument("--run", action="store_true", help="run T5's two policies on Spark first (sequentially)")
    p.add_argument("--run-missing", action="store_true",
                   help="as --run, only if the store has no finished T5 suite yet (what `make reproduce` does)")
    p.add_argument("--out", type=Path, default=Path("docs/seep.md"))
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    p.add_argument("--master", default="local[4]")
    args = p.parse_args(argv)
    uri = args.tracking_uri or default_tracking_uri()
    if args.run_missing and not args.run and latest_spark_suite(uri, args.experiment) is not None:
        print(f"T5 on Spark: already in {uri} (--run runs it again)")
    elif args.run or args.run_missing:
        print(f"Spark runs: parent {run_spark(uri, args.experiment, args.master)}")
    text = page(uri, args.experiment, args.out.parent / "seep" / "t5.png")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
