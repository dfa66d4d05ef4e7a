"""The README's workload examples are specs the project accepts (the README must stay true)."""
import re
from pathlib import Path

import pytest
import yaml

from workloads import Schedule, parse_workload
from workloads.traces import available_traces, traces_dir

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.DOTALL)


def test_readme_has_workload_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.split("\n")[0])
def test_readme_workload_example_parses_and_replays(block):
    raw = yaml.safe_load(block)
    if "trace" in raw and raw["trace"].get("name") not in available_traces():
        pytest.skip(f"trace {raw['trace'].get('name')} not found in {traces_dir()} (set ELASTIC_TRACES_DIR)")
    schedule = Schedule(parse_workload(raw, source="README.md"))
    assert schedule.total_events > 0


def test_ci_runs_exactly_the_readme_test_command():
    text = README.read_text()
    after = text[text.index("run the test suite"):]
    command = re.search(r"```bash\n(.*?)\n```", after, re.DOTALL).group(1).strip()
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    steps = [line.strip() for line in ci if line.strip() and not line.lstrip().startswith("#")]
    assert steps[-1] == command == "make test"
