"""Bad input: one line naming the culprit, exit code 2, nothing started and nothing recorded."""

import pytest

from tests.integration.conftest import run_cli


@pytest.mark.parametrize(
    "args, message",
    [
        (["--controller", "nonesuch"], "unknown controller 'nonesuch'"),
        (["--controller", "threshold", "--param", "cooldown=3"], "unknown parameter(s) cooldown"),
        (["--controller", "threshold", "--param", "scale_up_ratio=-1"], "'scale_up_ratio' must be >= 0.0"),
        (["--controller", "static", "--workload", "nope.yaml"], "workload file nope.yaml does not exist"),
        (["--controller", "static", "--duration", "0"], "'duration_s' must be > 0"),
        (["--controller", "static", "--slo-target", "1.5"], "--slo-target must be in (0, 1]"),
        (["--controller", "static", "--master", "spark://127.0.0.1:1"], "cannot reach 127.0.0.1:1"),
        (["--controller", "static", "--master", "locl[2]"], "is not a Spark master URL"),
        (["--controller", "static", "--param", "degree"], "--param 'degree': expected NAME=VALUE"),
        (["--param", "degree=2"], "no controller given"),
        (["--controller", "autoscale", "--param", "period_s=1"],
         "period_s (1.0) is shorter than the trigger interval (2.0)"),
        (["--controller", "autoscale", "--param", "theta_min=0.9"], "theta_min (0.9) must be below theta_max (0.8)"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message, tracking_uri, mlflow_client):
    proc = run_cli([*args, "--tracking-uri", tracking_uri, "--experiment", "bad-input"], timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert mlflow_client.get_experiment_by_name("bad-input") is None, "no MLflow run may be created"


def test_bad_yaml_workload_names_file_and_line(tmp_path):
    bad = tmp_path / "w.yaml"
    bad.write_text("profile: constant\nparams:\n  rate: [1, 2\nduration_s: 4\n")
    proc = run_cli(["--controller", "static", "--workload", str(bad)], timeout=60)
    assert proc.returncode == 2
    assert f"{bad}: line" in proc.stderr and "is not valid YAML" in proc.stderr


def test_missing_java_is_reported_before_spark_starts(tmp_path):
    env = {"PATH": "/usr/local/nonexistent", "JAVA_HOME": ""}
    proc = run_cli(["--controller", "static"], timeout=60, env=env)
    assert proc.returncode == 2
    assert "Java not found" in proc.stderr
