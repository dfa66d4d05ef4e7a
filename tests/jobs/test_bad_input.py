"""Bad input: one line naming the culprit, exit code 2, nothing started and nothing recorded.

`python -m jobs.run` is `jobs.run.main` plus the interpreter: the cases are checked by calling `main` in this process
(each would otherwise pay a Python start-up for nothing the subprocess adds), and one case runs the command as a user
does, to prove the exit code and the single stderr line end to end. Validation checks Java and the Spark master
(`RunConfig.validate`), hence the `spark` marker, though no Spark starts."""

import pytest

from jobs.run import main
from tests.support import run_cli

pytestmark = pytest.mark.spark


def run_main(argv, capsys):
    """`python -m jobs.run ARGV` in this process: (exit code, stderr)."""
    capsys.readouterr()  # drop anything captured before
    code = main(argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--controller", "nonesuch"], "unknown controller 'nonesuch'"),
        (["--controller", "threshold", "--param", "cooldown=3"], "unknown parameter(s) cooldown"),
        (["--controller", "threshold", "--param", "scale_up_ratio=-1"], "'scale_up_ratio' must be >= 0.0"),
        (["--controller", "static", "--workload", "nope.yaml"], "workload file nope.yaml does not exist"),
        (["--controller", "static", "--duration", "0"], "'duration_s' must be > 0"),
        (["--controller", "static", "--slo-target", "1.5"], "--slo-target must be <= 1.0, got 1.5"),
        (["--controller", "static", "--master", "spark://127.0.0.1:1"], "cannot reach 127.0.0.1:1"),
        (["--controller", "static", "--master", "locl[2]"], "is not a Spark master URL"),
        (["--controller", "static", "--param", "degree"], "--param 'degree': expected NAME=VALUE"),
        (["--param", "degree=2"], "no controller given"),
        (["--controller", "autoscale", "--param", "period_s=1"],
         "period_s (1.0) is shorter than the trigger interval (2.0)"),
        (["--controller", "autoscale", "--param", "theta_min=0.9"], "theta_min (0.9) must be below theta_max (0.8)"),
        (["--policy", "seep-t9"], "no policy 'seep-t9' in the catalogue"),
        (["--controller", "static", "--policy", "seep-t5"], "--policy is for controller 'seep-policy', not 'static'"),
        (["--controller", "spark-dynamic-allocation"], "acts on executors and needs a cluster master"),
        (["--controller", "static", "--master", "spark://127.0.0.1:1", "--host-scaling"],
         "--host-scaling: controller 'static' does not manage executors"),
        (["--policy", "{rules: [{operator: enrich, action: scale-out, by: {absolute: 1}}]}"],
         "policy (inline), line 1, column 10: rule #1: missing field 'when'"),
        (["--controller", "seep-policy", "--param",
          "policy={rules: [{name: r, operator: enrich, action: grow, by: {absolute: 1}, "
          "when: {metric: cpu, above: 5, for_at_least: 5}}]}"], "rule 'r': action: expected one of scale-out"),
        (["--controller", "static", "--placement", "nonesuch"], "--placement: unknown placement controller 'nonesuch'"),
        (["--controller", "static", "--placement", "sousa", "--placement-param", "sensitivity=0"], "'sensitivity'"),
        (["--controller", "static", "--placement", "sousa", "--placement-param", "max_moves=0"], "'max_moves'"),
        (["--controller", "static", "--placement", "souravlas", "--placement-param", "sub_cluster_size=1"],
         "sub_cluster_size must be at least 2: a sub-cluster of one partition has no target"),
        (["--controller", "static", "--key-groups", "0"], "--key-groups must be >= 1, got 0"),
        (["--controller", "static", "--keep-warm", "50"], "--keep-warm must be <= 45.0, got 50.0"),
        (["--controller", "static", "--placement", "souravlas"],
         "--placement souravlas: controller 'static' keeps the keyed operator 'aggregate' at degree 1"),
        (["--controller", "threshold", "--max-degree", "1", "--placement", "sousa"],
         "--placement sousa: --max-degree 1 keeps the keyed operator 'aggregate' at one partition"),
        (["--controller", "static", "--max-events-per-batch", "-1"], "--max-events-per-batch must be >= 0, got -1"),
        (["--controller", "static", "--placement-param", "sensitivity=0.5"],
         "--placement-param given without --placement"),
        (["--controller", "static", "--trigger-phase", "2"],
         "--trigger-phase must be 'seeded', 'free' or seconds in [0, 2) (the trigger interval), got '2'"),
        (["--controller", "static", "--trigger-phase", "late"], "--trigger-phase must be 'seeded', 'free' or"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message, tracking_uri, mlflow_client, capsys):
    code, err = run_main([*args, "--tracking-uri", tracking_uri, "--experiment", "bad-input"], capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
    assert mlflow_client.get_experiment_by_name("bad-input") is None, "no MLflow run may be created"


def test_bad_yaml_workload_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "w.yaml"
    bad.write_text("profile: constant\nparams:\n  rate: [1, 2\nduration_s: 4\n")
    code, err = run_main(["--controller", "static", "--workload", str(bad)], capsys)
    assert code == 2
    assert f"{bad}: line" in err and "is not valid YAML" in err


def test_missing_java_is_reported_before_spark_starts(monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/usr/local/nonexistent")
    monkeypatch.setenv("JAVA_HOME", "")
    code, err = run_main(["--controller", "static"], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Java not found"), err


def test_a_bad_policy_file_names_the_file_line_and_rule_before_anything_starts(tmp_path, tracking_uri,
                                                                                mlflow_client):
    """End to end, as a user runs it: the process exits 2 with exactly one line on stderr and records nothing."""
    bad = tmp_path / "policy.yaml"
    bad.write_text("rules:\n  - name: drain\n    operator: enrich\n    action: scale-in\n    by: {absolute: 1}\n"
                   "    when: {metric: queue-length, below: 1, for_at_least: soon}\n")
    proc = run_cli(["--policy", str(bad), "--tracking-uri", tracking_uri, "--experiment", "bad-policy"], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"error: policy {bad}, line 6, column 58: rule 'drain': when: for_at_least: "
                                   "expected a duration in seconds (30, '30s', '5min', '5 minutes') greater than 0, "
                                   "got 'soon'")
    assert proc.stdout == ""
    assert mlflow_client.get_experiment_by_name("bad-policy") is None


def test_an_unreachable_tracking_store_exits_4_in_one_line_before_anything_starts(tmp_path, capsys):
    """MLflow's client would retry for about two minutes and then fail after Spark started; the check answers first."""
    from benchmarks.faults import closed_port

    uri = f"http://127.0.0.1:{closed_port()}"
    code, err = run_main(["--controller", "static", "--tracking-uri", uri, "--output-dir", str(tmp_path / "job")],
                         capsys)
    assert code == 4, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: MLflow tracking server {uri} cannot be reached"), err
    assert not (tmp_path / "job").exists(), "nothing started"


def test_an_output_folder_holding_a_users_files_is_refused_not_replaced(tmp_path, capsys):
    """A run replaces its output folder; a mistyped --output-dir must never delete what a user keeps there."""
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("months of work")
    code, err = run_main(["--controller", "static", "--output-dir", str(mine)], capsys)
    assert code == 2 and err.strip() == (f"error: --output-dir: {mine} holds files that are not a run's output (no "
                                         ".elastic-run in it); a run replaces its output folder, so give a new or "
                                         "empty folder"), err
    assert (mine / "chapter1.tex").read_text() == "months of work"
