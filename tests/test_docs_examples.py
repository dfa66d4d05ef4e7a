"""The workload, policy and command examples of the README and the guides are what the project accepts (the pages
must stay true), and CI runs exactly the README's test command."""
import re
from pathlib import Path

import pytest
import yaml

from workloads import Schedule, parse_workload
from workloads.traces import available_traces, traces_dir

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", ROOT / "docs" / "getting-started.md",
         *sorted((ROOT / "docs" / "guides").glob("*.md"))]
TEXT = "\n".join(page.read_text() for page in PAGES)
YAML_BLOCKS = re.findall(r"```yaml\n(.*?)```", TEXT, re.DOTALL)
POLICY_BLOCKS = [b for b in YAML_BLOCKS if "rules:" in b]
SUITE_BLOCKS = [b for b in YAML_BLOCKS if b.startswith(("controllers:", "description:")) and "controllers:" in b]
BLOCKS = [b for b in YAML_BLOCKS if b not in POLICY_BLOCKS and b not in SUITE_BLOCKS]


def test_readme_has_workload_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.split("\n")[0])
def test_readme_workload_example_parses_and_replays(block):
    raw = yaml.safe_load(block)
    if "trace" in raw and raw["trace"].get("name") not in available_traces():
        pytest.skip(f"trace {raw['trace'].get('name')} not found in {traces_dir()} (set ELASTIC_TRACES_DIR)")
    schedule = Schedule(parse_workload(raw, source="README.md"))
    assert schedule.total_events > 0


@pytest.mark.parametrize("block", SUITE_BLOCKS, ids=lambda b: b.split("\n")[0])
def test_suite_examples_are_valid_suites(block):
    from analysis.suite import SuiteRequest

    assert SuiteRequest.from_mapping(yaml.safe_load(block)).cases()


def test_ci_runs_exactly_the_readme_test_command():
    text = README.read_text()
    after = text[text.index("run the test suite"):]
    command = re.search(r"```bash\n(.*?)\n```", after, re.DOTALL).group(1).strip()
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    steps = [line.strip() for line in ci if line.strip() and not line.lstrip().startswith("#")]
    assert steps[-1] == command == "make test"


def test_readme_policy_examples_parse_and_the_builder_example_runs():
    from controllers.policy import parse_policy
    from jobs.topology import DEFAULT_TOPOLOGY

    assert POLICY_BLOCKS
    for block in POLICY_BLOCKS:
        assert parse_policy(block, "README.md", DEFAULT_TOPOLOGY.names).rules
    text = TEXT
    python = [b for b in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if "controllers.policy" in b]
    assert python
    scope: dict = {}
    exec(python[0], scope)  # the README's own example, run as a user would paste it
    from_yaml = parse_policy(POLICY_BLOCKS[0], "README.md")
    assert scope["policy"].rules[0].triggers[0] == from_yaml.rules[0].triggers[0]
    inline = re.search(r'"seep-policy:policy=(\{rules: .*?\})"', text).group(1)
    import controllers
    from jobs.config import param_value

    controllers.build_controller("seep-policy", {"policy": param_value(inline)}, DEFAULT_TOPOLOGY.names, 8)


def _readme_run_commands() -> list[str]:
    """Every `elastic run` / `python -m jobs.run` command in the pages' bash blocks, continuation lines joined."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", TEXT, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            for form in ("-m jobs.run", "elastic run"):
                if form in line:
                    commands.append(line[line.index(form) + len(form):].strip())
    return commands


@pytest.mark.parametrize("command", [c for c in _readme_run_commands() if "--controller " in c and "--champion" not in
                                     c and "--policy" not in c and "--controller-config" not in c])
def test_readme_run_commands_name_real_options_controllers_and_parameters(command):
    import shlex

    import controllers
    from jobs.run import build_parser, config_from_args

    config = config_from_args(build_parser().parse_args(shlex.split(command)))
    controllers.validate_config(config.controller, config.controller_params)
