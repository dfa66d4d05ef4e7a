"""`elastic`: one command for what a user does with the pipeline, each task a subcommand.

    elastic --help                      # the subcommands
    elastic demo                        # three controller variants on `step`, compared, in MLflow
    elastic run --help                  # one subcommand's options and examples

Each subcommand is a module's own command line (`elastic run` is `python -m jobs.run`, which stays as an alias):
the module keeps its parser, its checks and its exit codes; this file only names it, shows it under its subcommand
name and gives its examples, taken from the module's docstring so that they cannot drift from it.
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

PROG = "elastic"


@dataclass(frozen=True)
class Command:
    module: str
    summary: str
    leading: tuple[str, ...] = ()  # arguments the subcommand puts before the user's (suite: --suite)
    examples_with: str | None = None  # only the docstring's examples with this option
    examples_without: str | None = None  # only those without it


COMMANDS: dict[str, Command] = {
    "demo": Command("analysis.demo", "run a few controller variants on one workload, compare and report them",
                    examples_without="--suite"),
    "suite": Command("analysis.demo", "run a suite file (controllers x workloads x seeds), compare, report, promote",
                     leading=("--suite",), examples_with="--suite"),
    "run": Command("jobs.run", "run one streaming job under one controller and record it in MLflow"),
    "calibrate": Command("jobs.calibrate", "measure the job's costs on this machine (the oracle and the simulator "
                                           "read them)"),
    "calibrate-restart": Command("jobs.calibrate_restart", "measure a native query's restart downtime on a master"),
    "tune": Command("analysis.tuning", "search a controller's settings in the simulator, then confirm on Spark"),
    "predictors": Command("analysis.predictors", "train and evaluate the load predictors (MLflow registry)"),
    "compare": Command("analysis.compare", "compare recorded runs: one table with intervals"),
    "report": Command("analysis.report", "write the HTML report of an experiment (tables, figures, decisions)"),
    "promote": Command("analysis.promote", "promote each workload class's winner to the registry (champion alias)"),
    "regression": Command("analysis.regression", "compare two experiments and fail on a regression"),
    "cluster": Command("deploy.spark_cluster", "start, inspect or stop a local Spark standalone cluster"),
    "stack": Command("deploy.local_stack", "start, inspect or stop the local Airflow and MLflow servers"),
    "kafka": Command("deploy.kafka", "start or stop a local Kafka broker; create topics"),
    "produce": Command("jobs.kafka_producer", "replay a workload into a Kafka topic on its schedule"),
    "faults": Command("benchmarks.faults", "inject each fault for real and check the project's promises"),
}


def _aliases() -> list[tuple[str, str]]:
    """(`python -m` form, subcommand form), longest first, for rewriting examples and usage lines."""
    pairs = [(f"python -m {c.module}{''.join(' ' + a for a in c.leading)}", f"{PROG} {name}")
             for name, c in COMMANDS.items()]
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def as_subcommand_text(text: str) -> str:
    """`text` with every `[.venv/bin/]python -m <module> [leading args]` of a known subcommand as `elastic <name>`."""
    for long, short in _aliases():
        text = re.sub(r"(?:\.venv/bin/)?" + re.escape(long) + r"(?![\w.])", short, text)
    return text


def entry_module(command: Command):
    """The module whose `main(argv)` the subcommand runs: the module, or a package's `__main__`."""
    module = importlib.import_module(command.module)
    return module if hasattr(module, "main") else importlib.import_module(f"{command.module}.__main__")


def examples(name: str) -> list[str]:
    """The example command lines of a subcommand's module docstring (indented lines that run the module, with
    their continuation lines), written as `elastic` commands."""
    command = COMMANDS[name]
    doc = entry_module(command).__doc__ or ""
    found: list[str] = []
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if not re.match(rf"\s+(?:\.venv/bin/)?python -m {re.escape(command.module)}(?![\w.])", line):
            continue
        block = [line]
        while block[-1].rstrip().endswith("\\") and i + len(block) < len(lines):
            block.append(lines[i + len(block)])
        text = "\n".join(block)
        if command.examples_with and command.examples_with not in text:
            continue
        if command.examples_without and command.examples_without in text:
            continue
        found.append(as_subcommand_text(text).rstrip())
    indent = min((len(line) - len(line.lstrip()) for line in found), default=0)
    return [("\n".join(part[indent:] if part[:indent].isspace() else part for part in example.splitlines()))
            for example in found]


@contextmanager
def _shown_as(name: str) -> Iterator[None]:
    """While the module parses its arguments, its parser (and any it adds below it) is shown as `elastic <name>`,
    with the subcommand's examples after its options. The module's parser itself is unchanged: `python -m` keeps
    working as before."""
    original = argparse.ArgumentParser.__init__
    top, module = f"{PROG} {name}", COMMANDS[name].module
    epilog = "examples:\n" + "\n".join(f"  {line}" for example in examples(name) for line in example.splitlines())

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if self.prog == f"python -m {module}":
            self.prog = top
        elif self.prog.startswith("python -m "):
            self.prog = as_subcommand_text(self.prog)
        own = as_subcommand_text(self.epilog) if self.epilog else None
        if self.prog == top and f"{top} " not in (own or "") and epilog.count("\n"):
            own = epilog if not own else f"{own}\n\n{epilog}"
            self.formatter_class = _with_raw_epilog(self.formatter_class)
        self.epilog = own
        self.description = as_subcommand_text(self.description) if self.description else self.description

    argparse.ArgumentParser.__init__ = init
    try:
        yield
    finally:
        argparse.ArgumentParser.__init__ = original


def _with_raw_epilog(formatter: type[argparse.HelpFormatter]) -> type[argparse.HelpFormatter]:
    """The parser's own formatter, keeping the epilog's lines (examples are not a paragraph to reflow)."""
    if issubclass(formatter, argparse.RawDescriptionHelpFormatter):
        return formatter
    return type("SubcommandHelpFormatter", (argparse.RawDescriptionHelpFormatter, formatter), {})


def version() -> str:
    """The installed distribution's version (pyproject.toml), or "unknown" for a checkout run without `make setup`."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("elastic-streaming-spark")
    except PackageNotFoundError:
        return "unknown"


def overview() -> str:
    width = max(len(name) for name in COMMANDS)
    rows = "\n".join(f"  {name:<{width}}  {c.summary}" for name, c in COMMANDS.items())
    return (f"usage: {PROG} <command> [options]\n\n"
            "Elasticity controllers side by side on Spark Structured Streaming jobs: run, compare, tune, promote.\n\n"
            f"commands:\n{rows}\n\n"
            f"`{PROG} <command> --help` shows a command's options and examples. Each command is also "
            "`python -m <module>`. `elastic --version` prints the version.\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(overview(), end="")
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"{PROG} {version()}")
        return 0
    name, rest = argv[0], argv[1:]
    command = COMMANDS.get(name)
    if command is None:
        print(f"{PROG}: unknown command '{name}'; commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    given = bool(rest) and not rest[0].startswith("-")
    if command.leading and not given and not {"-h", "--help"} & set(rest):
        print(f"{PROG} {name}: give the file first ({PROG} {name} FILE [options]; --help for the options)",
              file=sys.stderr)
        return 2
    module = entry_module(command)
    leading = list(command.leading) if given else []
    with _shown_as(name):
        try:
            code = module.main([*leading, *rest])
        except SystemExit as exc:  # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
