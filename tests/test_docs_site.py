"""The documentation site builds strictly (a broken link, anchor or nav entry fails it), and its reference pages are
generated from the code: a controller's declared parameter appears with its default and range."""
import os
import subprocess
import sys
from pathlib import Path

from controllers.ds2 import DS2Controller as DS2
from elastic.reference import params_table
from params.declare import Param, SearchRange
from tests.conftest import ROOT


def test_the_site_builds_strictly_with_generated_reference_pages(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    controllers_page = (site / "reference" / "controllers" / "index.html").read_text()
    assert "scale_up_max_factor" in controllers_page and "stabilisation_s" in controllers_page
    cli_page = (site / "reference" / "cli" / "index.html").read_text()
    assert "elastic run" in cli_page and "elastic suite" in cli_page


def test_a_parameter_row_gives_type_default_bounds_search_range_and_meaning():
    row = params_table({"cooldown_s": Param(float, 6.0, "seconds | after a change", 0.0, open_minimum=True,
                                            search=SearchRange(1.0, 30.0, log=True))})[2]
    assert row == "| `cooldown_s` | float | `6.0` | (0, ∞) | [1, 30] log | seconds \\| after a change |"
    assert len(params_table(DS2.PARAMS)) == len(DS2.PARAMS) + 2


def test_the_readme_is_read_in_five_minutes():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the detail to a page under docs/"


def test_the_suite_and_metric_pages_document_every_field_and_metric():
    from analysis.runs import SUMMARY_METRICS
    from analysis.suite import REQUEST_FIELDS
    from elastic.reference import metrics_page, suites_page

    suites, metrics = suites_page(), metrics_page()
    assert all(f"| `{name}` |" in suites for name in REQUEST_FIELDS)
    assert all(f"| `{name}` | " in metrics and doc for name, doc in SUMMARY_METRICS.items())


def test_every_workload_field_is_documented_where_it_is_parsed():
    from workloads import spec

    documented = {section: set(fields) for section, fields in spec.FIELD_DOCS.items()}
    assert documented == {"workload": spec._TOP_LEVEL_FIELDS, "streams[]": spec._STREAM_FIELDS,
                          "keys": spec._KEY_FIELDS, "trace": spec._TRACE_FIELDS, "noise": spec._NOISE_FIELDS}
