"""The `elastic` command: every task a subcommand, each with its module's options and examples under its own name."""
import subprocess
import sys
from pathlib import Path

import pytest

from elastic.cli import COMMANDS, as_subcommand_text, examples, main


def test_the_overview_lists_every_subcommand(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: elastic <command>")
    for name in COMMANDS:
        assert f"\n  {name} " in out, name


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_subcommand_shows_its_options_and_examples_under_its_own_name(name, capsys):
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: elastic {name} "), out[:200]
    assert "python -m " not in out.split("\n\n")[0], "the usage line names the subcommand"
    found = examples(name)
    assert found and all(example.startswith(f"elastic {name}") for example in found), found
    shown = [line.strip() for line in out.split("\n\n", 1)[1].splitlines()]
    assert any(line.startswith(f"elastic {name} ") or line == f"elastic {name}" for line in shown), out


def test_the_version_is_the_installed_distributions(capsys):
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"elastic {version('elastic-streaming-spark')}"


def test_an_unknown_subcommand_and_a_suite_without_its_file_exit_2_saying_why(capsys):
    assert main(["nonesuch"]) == 2
    assert "unknown command 'nonesuch'" in capsys.readouterr().err
    assert main(["suite", "--seeds", "1"]) == 2
    assert "give the file first" in capsys.readouterr().err
    assert main([]) == 2


def test_module_commands_in_text_become_subcommands():
    text = ("    python -m analysis.demo --suite suites/bursty.yaml --seeds 1\n"
            "    .venv/bin/python -m jobs.run --controller ds2\n    python -m jobs.runner_elsewhere\n")
    assert as_subcommand_text(text) == ("    elastic suite suites/bursty.yaml --seeds 1\n"
                                        "    elastic run --controller ds2\n    python -m jobs.runner_elsewhere\n")


def test_the_installed_console_script_runs():
    script = Path(sys.executable).parent / "elastic"
    if not script.exists():
        pytest.skip(f"{script} is not installed: `make setup` installs the project editable")
    proc = subprocess.run([str(script), "run", "--describe", "ds2"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "scale_up_max_factor" in proc.stdout
