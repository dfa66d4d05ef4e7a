"""The documentation site's reference pages, generated from the code when the site is built (an MkDocs hook named
in mkdocs.yml), so that they cannot drift from it: the command line from its parsers, every controller's parameters
from their declarations, the workload catalogue from its files.

    python -m elastic.reference cli          # one page's Markdown on stdout
"""
from __future__ import annotations

import contextlib
import io
import sys

from params.declare import Choices, Param, SearchRange

PAGES = {"reference/cli.md": "cli", "reference/controllers.md": "controllers", "reference/workloads.md": "workloads",
         "reference/suites.md": "suites", "reference/metrics.md": "metrics"}


def cli_page() -> str:
    from elastic.cli import COMMANDS, main

    parts = ["# Command line", "",
             "Every task is a subcommand of `elastic` (installed by `make setup` into `.venv/bin`). Each is also "
             "`python -m <module>`, named below. This page is the output of `elastic <command> --help`.", ""]
    for name, command in COMMANDS.items():
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main([name, "--help"])
        parts += [f"## elastic {name}", "", f"{command.summary[0].upper()}{command.summary[1:]}. "
                  f"Module: `{command.module}`.", "", "```text", out.getvalue().rstrip(), "```", ""]
    return "\n".join(parts)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _bounds(spec: Param) -> str:
    if spec.choices is not None:
        return ", ".join(f"`{c}`" for c in spec.choices)
    if spec.minimum is None and spec.maximum is None:
        return ""
    low = "" if spec.minimum is None else f"{'(' if spec.open_minimum else '['}{spec.minimum:g}"
    high = "" if spec.maximum is None else f"{spec.maximum:g}{')' if spec.open_maximum else ']'}"
    return f"{low or '(−∞'}, {high or '∞)'}"


def _search(spec: Param) -> str:
    if isinstance(spec.search, SearchRange):
        return f"[{spec.search.low:g}, {spec.search.high:g}]{' log' if spec.search.log else ''}"
    if isinstance(spec.search, Choices):
        return ", ".join(f"`{c}`" for c in spec.search.values)
    return ""


def params_table(declared: dict[str, Param]) -> list[str]:
    rows = ["| parameter | type | default | bounds | tuned in | what it does |", "|---|---|---|---|---|---|"]
    for name, spec in declared.items():
        kind = f"operator → {spec.kind.__name__}" if spec.per_operator else spec.kind.__name__
        default = "" if spec.default in ("", None, {}) else f"`{spec.default}`"
        rows.append(f"| `{name}` | {kind} | {_cell(default)} | {_cell(_bounds(spec))} | {_cell(_search(spec))} | "
                    f"{_cell(spec.doc)} |")
    return rows


def controllers_page() -> str:
    import controllers

    parts = ["# Controllers and their parameters", "",
             "Each controller's declared parameters, as `elastic run --describe NAME` prints them: give them as "
             "`--param NAME=VALUE`, in a configuration string (`ds2:stabilisation_s=30`) or in a controller config "
             "file. *Tuned in* is the range `elastic tune` searches by default.", ""]
    for name, cls in controllers.registered().items():
        parts += [f"## {name}", "", f"{cls.summary[0].upper()}{cls.summary[1:]}".rstrip(".") + ".", ""]
        parts += params_table(dict(cls.PARAMS)) if cls.PARAMS else ["No parameters."]
        rules = [rule.describe() for rule in cls.RULES]
        if rules:
            parts += ["", "Rules checked before a run starts:", ""] + [f"- {rule}" for rule in rules]
        parts.append("")
    return "\n".join(parts)


def workloads_page() -> str:
    from workloads import catalogue_names, load_workload
    from workloads.spec import FIELD_DOCS

    parts = ["# Workloads", "",
             "The workload catalogue (`workloads/catalogue/`): give a name to `--workload`, or a file of your own in "
             "the same form. Real traces are read in place from `../shared/traces` (or `$ELASTIC_TRACES_DIR`).", "",
             "| name | profile | duration, s | seed | description |", "|---|---|---|---|---|"]
    for name in catalogue_names():
        try:
            spec = load_workload(name)
        except Exception as exc:  # a trace this machine lacks: named, not hidden
            parts.append(f"| `{name}` | | | | not loadable here: {_cell(exc)} |")
            continue
        parts.append(f"| `{name}` | {spec.profile} | {spec.duration_s:g} | {spec.seed} | "
                     f"{_cell(spec.description or '')} |")
    parts += ["", "## Fields", "",
              "A workload file (YAML or JSON; see the workloads guide for examples). Unknown fields are refused, "
              "naming the file and the field.", ""]
    for section, fields in FIELD_DOCS.items():
        parts += [f"### `{section}`", "", "| field | what it holds |", "|---|---|"]
        parts += [f"| `{name}` | {_cell(doc)} |" for name, doc in fields.items()] + [""]
    return "\n".join(parts) + "\n"


def suites_page() -> str:
    from analysis.suite import REQUEST_FIELD_DOCS, REQUEST_FIELDS, SUITE_SETTINGS
    from params.run import RUN_SETTINGS

    parts = ["# Run settings and suite files", "",
             "## Run settings", "",
             "Every run's settings, as `elastic run` takes them (`--slo-latency` for `slo_latency_s`, …); suite "
             "files and the experiment DAG's Params set some of them for all their runs (below).", "", *params_table(dict(RUN_SETTINGS)), "",
             "## Suite files", "",
             "A suite file (`suites/*.yaml`; `elastic suite FILE`, or the experiment DAG's `suite` Param) names the "
             "runs of an experiment: every configuration × workload × seed (× query). Its fields:", "",
             "| field | what it holds |", "|---|---|"]
    for name in (*REQUEST_FIELDS, "tolerance", "description"):
        doc = SUITE_SETTINGS[name].doc if name in SUITE_SETTINGS else REQUEST_FIELD_DOCS[name]
        parts.append(f"| `{name}` | {_cell(doc)} |")
    return "\n".join(parts) + "\n"


def metrics_page() -> str:
    from analysis.runs import SUMMARY_METRICS

    parts = ["# Metrics", "",
             "Each run's summary metrics in MLflow (the comparison, the report and the promotion read these); each "
             "run also logs per-batch metrics named `batch.*` and the artifacts `batches.parquet`, "
             "`decisions.jsonl`, `ledger.csv`, `summary.json` and `timeline.png`.", "",
             "| metric | what it measures |", "|---|---|"]
    parts += [f"| `{name}` | {_cell(doc)} |" for name, doc in SUMMARY_METRICS.items()]
    return "\n".join(parts) + "\n"


def page(kind: str) -> str:
    return {"cli": cli_page, "controllers": controllers_page, "workloads": workloads_page, "suites": suites_page,
            "metrics": metrics_page}[kind]()


def on_files(files, config):
    """MkDocs hook: the reference pages added to the site as generated files."""
    from mkdocs.structure.files import File

    for path, kind in PAGES.items():
        files.append(File.generated(config, path, content=page(kind)))
    return files


if __name__ == "__main__":
    print(page(sys.argv[1] if len(sys.argv) > 1 else "cli"))
