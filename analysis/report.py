"""The experiment report: one self-contained HTML page (PNGs embedded) a user opens in the MLflow UI to learn which
configuration won on each workload, by how much, how sure we are, and what the promotion did about it.

    python -m analysis.report --parent-run-id <id> [--out DIR] [--no-log]

It is written to a folder (report.html plus the PNGs as files) and logged to the parent run under `report/`.
"""
from __future__ import annotations

import argparse
import base64
import html
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import pandas as pd
from mlflow.tracking import MlflowClient

from analysis import decision as decision_rule
from analysis import stats
from analysis.decision import PromotionDecision, slo_target_of
from analysis.figures import interval_bars_png, pareto_png, workload_timelines_png
from analysis.runs import load_runs
from jobs.recording.recorder import default_tracking_uri

CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:1em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
td:first-child,th:first-child,td.l{text-align:left}tr.win{background:#e8f5e9}tr.miss{color:#888}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}.rule{background:#f6f6f6;padding:.5em 1em;font-size:13px}
.promote{color:#1b5e20;font-weight:bold}.keep{color:#555;font-weight:bold}code{background:#f3f3f3;padding:0 3px}"""


def _ci(row, metric: str, spec: str) -> str:
    if pd.isna(row.get(metric)):
        return "–"
    return (f"{row[metric]:{spec}} <small>[{row[metric + '_low']:{spec}}, "
            f"{row[metric + '_high']:{spec}}]</small>")


LEDGER_LEGEND = (
    "<p><small><b>Regret per SLO</b>: cost per unit of SLO attainment above the oracle's on the same workload and "
    "seed (0 % is the oracle's price). From each run's <b>decision ledger</b> (artifact <code>ledger.csv</code>: "
    "every action, what the controller predicted and what the next batches did): <b>actions that fell behind</b>, "
    "the share after which the new vector's capacity stayed below the arrival rate; <b>capacity error</b>, the "
    "median |predicted ÷ realised − 1| of the capacity the controller expected of its vector (– where it makes no "
    "prediction).</small></p>")


def _num(value, spec: str) -> str:
    return "–" if pd.isna(value) else format(value, spec)


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def run_batches(client: MlflowClient, run_id: str, scratch: Path) -> pd.DataFrame | None:
    try:
        return pd.read_parquet(client.download_artifacts(run_id, "batches.parquet", str(scratch)))
    except Exception:  # a run that failed before writing its batches has none; the table still lists it
        return None


def _ranking_table(ranked: pd.DataFrame, runs: pd.DataFrame) -> str:
    extra = runs[runs["status"] == "FINISHED"].groupby("config").agg(
        lost=("records_lost", "sum"), dup=("records_duplicated", "sum"), actions=("scaling_actions", "mean"),
        oscillations=("oscillations", "mean"), backlog=("backlog_integral_event_s", "mean"),
        to_oracle=("cost_to_oracle", "mean"), core_s=("cost_executor_core_seconds", "mean"),
        regret=("regret_to_oracle", "mean"), behind=("ledger_fell_behind_share", "mean"),
        capacity_error=("ledger_capacity_error_median_abs", "mean"))
    head = ("<tr><th>rank</th><th>configuration</th><th>seeds</th><th>SLO attainment [95 % CI]</th>"
            "<th>cost slot-s [95 % CI]</th><th>executor core-s</th><th>p99 latency s [95 % CI]</th>"
            "<th>cost / oracle</th><th>regret per SLO</th>"
            "<th>scaling actions</th><th>actions that fell behind</th><th>capacity error</th>"
            "<th>oscillations</th><th>backlog event-s</th><th>lost / dup</th></tr>")
    rows = []
    for _, r in ranked.iterrows():
        e = extra.loc[r["config"]]
        cls = "win" if r["rank"] == 1 and r["meets_slo"] else ("miss" if not r["meets_slo"] else "")
        tie = f" <small>(tied with {html.escape(r['tied_with'])})</small>" if r["tied_with"] else ""
        rows.append(
            f'<tr class="{cls}"><td>{r["rank"]}</td><td class="l">{html.escape(r["config"])}{tie}</td>'
            f'<td>{r["runs"]}</td><td>{_ci(r, "slo_attainment", ".3f")}</td><td>{_ci(r, "cost_slot_seconds", ".0f")}'
            f'</td><td>{"–" if pd.isna(e["core_s"]) else format(e["core_s"], ".0f")}</td>'
            f'<td>{_ci(r, "latency_p99_s", ".2f")}</td>'
            f'<td>{_num(e["to_oracle"], ".2f")}</td><td>{_num(e["regret"], "+.0%")}</td>'
            f'<td>{e["actions"]:.1f}</td><td>{_num(e["behind"], ".0%")}</td><td>{_num(e["capacity_error"], ".0%")}</td>'
            f'<td>{0 if pd.isna(e["oscillations"]) else e["oscillations"]:.1f}</td>'
            f'<td>{0 if pd.isna(e["backlog"]) else e["backlog"]:.0f}</td>'
            f'<td>{e["lost"]:.0f} / {e["dup"]:.0f}</td></tr>')
    return f"<table>{head}{''.join(rows)}</table>"


def _verdict(ranked: pd.DataFrame, target: float) -> str:
    first = ranked.iloc[0]
    if not first["meets_slo"]:
        return (f"<p><b>No configuration meets the SLO target</b> ({target:.0%} of events within the bound); the "
                f"closest is <b>{html.escape(first['config'])}</b> at {first['slo_attainment']:.1%}.</p>")
    text = (f"<p><b>{html.escape(first['config'])}</b> wins: it meets the SLO target ({first['slo_attainment']:.1%} "
            f"≥ {target:.0%}) at the lowest cost ({first['cost_slot_seconds']:.0f} slot-s")
    runner = ranked.iloc[1] if len(ranked) > 1 else None
    if runner is not None and runner["meets_slo"]:
        saving = 1 - first["cost_slot_seconds"] / runner["cost_slot_seconds"]
        text += f", {saving:.0%} less than {html.escape(runner['config'])}"
    text += ")."
    if first["runs"] < 4:
        text += (f" <i>With {first['runs']} seed(s) per configuration no difference can be significant (exact "
                 "permutation test): treat the order as indicative, run ≥ 4 seeds to decide.</i>")
    elif runner is not None and runner["config"] == first.get("tied_with"):
        text += " It is tied with the runner-up (overlapping intervals, no significant difference)."
    return text + "</p>"


def _decision_html(d: PromotionDecision) -> str:
    cls = "promote" if d.promote else "keep"
    verb = (f"promoted <b>{html.escape(d.challenger)}</b>" + (f" (model version {d.new_version})" if d.new_version
                                                             else "")) if d.promote else "kept the champion"
    reasons = "".join(f"<li>{html.escape(r)}</li>" for r in d.reasons)
    return (f'<p><span class="{cls}">{verb}</span> — champion before: {html.escape(d.champion or "none")}.</p>'
            f"<ul>{reasons}</ul>")


TIMELINES_CAPTION = ("<h3>Over time (first seed of each configuration)</h3><p>Top: arrival rate and the capacity the "
                     "job had at its degrees (records ÷ batch time); the job keeps up while capacity is above "
                     "arrivals. Middle: p99 latency per batch against the SLO. Bottom: each operator's degree as the "
                     "controller set it.</p>")


def _figures(client: MlflowClient, workload: str, finished: pd.DataFrame, ranked: pd.DataFrame, front: list[str],
             target: float, slo_latency: float, figures: Path, scratch: Path) -> list[str]:
    part = []
    series = []
    for config in ranked["config"]:
        first = finished[finished["config"] == config].sort_values("seed").iloc[0]
        batches = run_batches(client, first["run_id"], scratch / first["run_id"])
        if batches is not None and len(batches):
            series.append((f"{config} (seed {first['seed']})", batches))
    if series:
        png = workload_timelines_png(workload, series, slo_latency, figures / f"{workload}-timelines.png")
        part.append(TIMELINES_CAPTION + _img(png, f"timelines {workload}"))
    bars = interval_bars_png(ranked, workload, target, figures / f"{workload}-intervals.png")
    pareto = pareto_png(ranked, front, workload, figures / f"{workload}-pareto.png")
    return part + ["<h3>How sure we are</h3>", _img(bars, f"intervals {workload}"),
                   "<h3>Cost against SLO violations</h3>", _img(pareto, f"pareto {workload}")]


RESTART_PHASES = ("hold_s", "stop_s", "repartition_s", "start_s", "first_batch_s")


def run_restarts(client: MlflowClient, run_id: str, scratch: Path) -> pd.DataFrame | None:
    """The run's restarts (restarts.jsonl: a native query's rescales, jobs.native.run); None where it has none."""
    try:
        table = pd.read_json(client.download_artifacts(run_id, "restarts.jsonl", str(scratch)), lines=True)
    except Exception:  # a laboratory run, or a native run that failed before writing them
        return None
    return table if len(table) else None


def _expected(restart) -> str:
    """What the master's restart calibration expected of this restart, where the run had one."""
    expected = restart.get("expected_downtime_s")
    return "" if expected is None or pd.isna(expected) else (
        f", {expected:.2f} s expected at {restart.get('state_mb', 0):.1f} MB of state")


def _restarts_html(client: MlflowClient, finished: pd.DataFrame, ranked: pd.DataFrame, scratch: Path) -> str:
    """Each configuration's rescales by restart: how many, the downtime they cost, and the first seed's restarts
    one by one with their phases and the events that arrived while the query was down."""
    if "restarts" not in finished or not pd.to_numeric(finished["restarts"], errors="coerce").fillna(0).any():
        return ""
    rows = []
    for config in ranked["config"]:
        runs = finished[finished["config"] == config]
        first = runs.sort_values("seed").iloc[0]
        restarts = run_restarts(client, first["run_id"], scratch / f"restarts-{first['run_id']}")
        listed = "" if restarts is None else "<br>".join(
            f"{int(r['from_partitions'])}→{int(r['to_partitions'])} at {r['started_at_s']:.1f} s: "
            f"{r['downtime_s']:.2f} s (" + ", ".join(f"{phase.removesuffix('_s').replace('_', ' ')} {r[phase]:.2f}"
                                                     for phase in RESTART_PHASES if phase in r) +
            f"){_expected(r)}, {int(r.get('arrived_meanwhile', 0))} events arrived meanwhile"
            for _, r in restarts.iterrows())
        rows.append(f'<tr><td class="l">{html.escape(config)}</td><td>{runs["restarts"].mean():.1f}</td>'
                    f'<td>{runs["restart_downtime_s"].mean():.1f}</td><td class="l"><small>seed {first["seed"]}: '
                    f'{listed or "none"}</small></td></tr>')
    return ("<h3>Rescales by restart</h3><p>A native query's partitions change by stop, state repartition and "
            "restart; the query reads nothing meanwhile. Means over seeds; the phases of the first seed's "
            "restarts.</p><table><tr><th>configuration</th><th>restarts</th><th>downtime s</th>"
            f"<th>restarts of the first seed</th></tr>{''.join(rows)}</table>")


def _workload_section(client: MlflowClient, workload: str, group: pd.DataFrame, target: float,
                      decision: PromotionDecision | None, figures: Path, scratch: Path) -> str:
    slo_latency = group["slo_latency_s"].dropna().max()
    part = [f'<h2 id="w-{workload}">Workload {html.escape(workload)}</h2>',
            f"<p>SLO: latency ≤ {slo_latency:g} s for {target:.0%} of events. Means over seeds with 95 % "
            "bootstrap intervals.</p>"]
    finished = group[group["status"] == "FINISHED"]
    if finished.empty:
        part.append("<p><b>No run finished.</b></p>")
    else:
        ranked = stats.rank(finished, target)
        front = stats.pareto_front(ranked)
        if "oracle_infeasible" in group and group["oracle_infeasible"].any():
            seeds = sorted(group.loc[group["oracle_infeasible"], "seed"].dropna().astype(int).unique())
            part.append(f"<p><b>Infeasible at the maximum degree</b> (seeds {', '.join(map(str, seeds))}): even the "
                        "oracle, knowing the future, cannot keep every event within the SLO there, so it is no "
                        "lower bound and no cost / oracle ratio is given for those seeds; the regret per SLO "
                        "still compares with what the oracle reached there (the feasible bound).</p>")
        part += [_verdict(ranked, target), _ranking_table(ranked, group), LEDGER_LEGEND,
                 _restarts_html(client, finished, ranked, scratch),
                 f"<p>Pareto front (cost vs SLO violations): {html.escape(', '.join(front))}</p>",
                 *_figures(client, workload, finished, ranked, front, target, slo_latency, figures, scratch)]
    bad = group[group["status"] != "FINISHED"]
    if len(bad):
        items = "".join(f"<li>{html.escape(str(r['config']))} seed {r['seed']}: {r['status']}"
                        f"{' — ' + html.escape(str(r['failure_reason'])) if r['failure_reason'] else ''} "
                        f"<small>(run {r['run_id']})</small></li>" for _, r in bad.iterrows())
        part.append(f"<h3>Runs that did not finish (excluded, never promoted)</h3><ul>{items}</ul>")
    part.append("<h3>Promotion</h3>")
    part.append(_decision_html(decision) if decision else "<p>No promotion was run for this report.</p>")
    return "\n".join(part)


def write_report(client: MlflowClient, runs: pd.DataFrame, out_dir: Path, title: str,
                 decisions: Sequence[PromotionDecision] = (), slo_target: float | None = None,
                 parent_run_id: str | None = None) -> Path:
    """Write report.html (figures embedded) and figures/*.png into out_dir; returns the HTML path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    by_class = {d.workload_class: d for d in decisions}
    sections, index = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for workload, group in runs.groupby("workload", sort=True):
            index.append(f'<li><a href="#w-{workload}">{html.escape(workload)}</a></li>')
            target = slo_target_of(group, slo_target)
            sections.append(_workload_section(client, workload, group, target, by_class.get(workload),
                                              out_dir / "figures", Path(tmp)))
    rules = (f'<div class="rule"><p><b>Ranking rule.</b> {html.escape(_rule_text(stats.__doc__, "RANKING RULE."))}'
             f'</p><p><b>Promotion rule.</b> {html.escape(_rule_text(decision_rule.__doc__, "PROMOTION RULE."))}'
             "</p></div>")
    origin = (f"parent MLflow run <code>{parent_run_id}</code>, " if parent_run_id else "") + (
        f"{len(runs)} runs, {(runs['status'] == 'FINISHED').sum()} finished; generated "
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} by analysis.report at code version {_code_version()}")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1><p>{origin}</p>"
            f"<ul>{''.join(index)}</ul>{rules}{''.join(sections)}</body></html>")
    path = out_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def _rule_text(doc: str | None, marker: str) -> str:
    """The rule as stated once in its module's docstring, so the report never paraphrases it differently."""
    text = (doc or "").split(marker, 1)[-1]
    paragraph = text.split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def _code_version() -> str:
    from jobs.recording.recorder import git_revision

    return git_revision()[:12]


def report_for_parent(tracking_uri: str, parent_run_id: str, out_dir: Path | None = None,
                      decisions: Sequence[PromotionDecision] = (), log: bool = True) -> Path:
    """Report on the child runs of a parent run; logged to it under report/ (unless log=False)."""
    client = MlflowClient(tracking_uri)
    parent = client.get_run(parent_run_id)
    runs = load_runs(tracking_uri, parent_run_id=parent_run_id)
    title = f"Experiment report: {parent.info.run_name or parent_run_id}"
    with tempfile.TemporaryDirectory() as tmp:
        folder = out_dir or Path(tmp) / "report"
        path = write_report(client, runs, folder, title, decisions, parent_run_id=parent_run_id)
        if log:
            client.log_artifacts(parent_run_id, str(folder), "report")
        if out_dir is None:
            return Path(f"{parent.info.artifact_uri}/report/report.html")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.report", description=__doc__.split("\n\n")[0])
    p.add_argument("--parent-run-id", required=True)
    p.add_argument("--tracking-uri", default=None, help="MLflow store (default: $MLFLOW_TRACKING_URI or .local)")
    p.add_argument("--out", type=Path, help="also write the report into this folder")
    p.add_argument("--no-log", action="store_true", help="do not log it to the parent run")
    args = p.parse_args(argv)
    uri = args.tracking_uri or default_tracking_uri()
    decisions = _logged_decisions(MlflowClient(uri), args.parent_run_id)
    try:
        path = report_for_parent(uri, args.parent_run_id, args.out, decisions, log=not args.no_log)
    except Exception as exc:  # unknown run, unreachable store: one line
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    return 0


def _logged_decisions(client: MlflowClient, parent_run_id: str) -> list[PromotionDecision]:
    """The promotion decisions already logged to the parent run, so a re-generated report still shows them."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            raw = json.loads(Path(client.download_artifacts(parent_run_id, "promotion/decisions.json", tmp))
                             .read_text())
        except Exception:
            return []
    return [PromotionDecision(**d) for d in raw]


if __name__ == "__main__":
    sys.exit(main())
