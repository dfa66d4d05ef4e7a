"""The tree states what is true and why; how it was reached is git history's and CHANGELOG.md's. A line that names an
internal development session (the word stop and its number) or an issue by its number fails here, with its file and
line."""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HISTORY = re.compile(r"\b[Ss]tops? [0-9]{1,3}\b|\b[Ii]ssues? #?[0-9]+")


def test_no_file_names_a_development_stop_or_an_issue_number():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    found = []
    for name in tracked.splitlines():
        path = ROOT / name
        if not path.is_file() or path.suffix in {".png", ".parquet", ".jsa", ".gz", ".zip"}:
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{name}:{i}: {line.strip()[:120]}" for i, line in enumerate(lines, 1) if HISTORY.search(line)]
    assert not found, "\n".join(found)
