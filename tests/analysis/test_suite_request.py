"""Suite requests (DAG params, suite files) are validated in full before any Spark job, naming field, file and line."""
from pathlib import Path

import pytest

from analysis.suite import Case, SuiteError, SuiteRequest, parse_variant, submit_jars
from jobs.recording.recorder import REPO_ROOT
from params.run import RUN_SETTINGS
from workloads.spec import load_workload


def test_a_valid_request_expands_to_cases_and_job_arguments():
    request = SuiteRequest.from_mapping({"controllers": ["static:degree=2", "threshold"], "workloads": ["step"],
                                         "seeds": [1, 2], "duration_s": 20})
    assert request.cases() == [Case("static:degree=2", "step", 1), Case("static:degree=2", "step", 2),
                               Case("threshold", "step", 1), Case("threshold", "step", 2)]
    args = request.cases()[0].run_args(request, experiment="e", tracking_uri="sqlite:///x.db", parent_run_id="p",
                                       tags={"airflow.dag_id": "d"})
    assert args[:6] == ["--controller", "static", "--workload", "step", "--seed", "1"]
    assert ["--param", "degree=2"] == args[args.index("--param"):args.index("--param") + 2]
    assert "airflow.dag_id=d" in args and "variant=static:degree=2" in args and "--duration" in args
    # the run settings not given are the declared ones (params.run), passed on to every job
    assert (request.slo_latency_s, request.slo_target) == (RUN_SETTINGS["slo_latency_s"].default,
                                                           RUN_SETTINGS["slo_target"].default)
    assert args[args.index("--slo-latency") + 1] == str(RUN_SETTINGS["slo_latency_s"].default)
    assert args[args.index("--slo-target") + 1] == str(RUN_SETTINGS["slo_target"].default)


def test_every_problem_is_reported_at_once_naming_the_field():
    with pytest.raises(SuiteError) as err:
        SuiteRequest.from_mapping({"controllers": ["nope", "static:degree=0"], "workloads": [], "seeds": [1, 1],
                                   "slo_target": 1.5, "colour": "blue"})
    lines = str(err.value).splitlines()
    assert "params.workloads: expected a non-empty list of names, got []" in lines
    assert "params.seeds: seeds repeat: [1, 1]" in lines
    assert "params.slo_target: must be <= 1.0, got 1.5" in lines
    assert "params: unknown field(s) colour" in lines
    assert any(line.startswith("params.controllers[0] 'nope': unknown controller 'nope'") for line in lines)
    assert any(line.startswith("params.controllers[1] 'static:degree=0'") and ">= 1" in line for line in lines)


@pytest.mark.parametrize("field, value, problem", [
    ("slo_latency_s", 0, "must be > 0.0, got 0.0"),
    ("slo_latency_s", "5", "must be of type float, got '5'"),
    ("slo_target", True, "must be of type float, got True"),
    ("slo_target", 0.0, "must be > 0.0, got 0.0"),
    ("duration_s", -1, "must be > 0.0, got -1.0"),
])
def test_run_settings_are_checked_against_their_declared_bounds(field, value, problem):
    with pytest.raises(SuiteError) as err:
        SuiteRequest.from_mapping({"controllers": ["static"], "workloads": ["step"], field: value})
    assert str(err.value).splitlines() == [f"params.{field}: {problem}"]


def test_a_suite_file_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "suite.yaml"
    path.write_text("controllers:\n  - threshold\n  - static:degree=zero\nworkloads: [step]\nseeds: [1]\n")
    with pytest.raises(SuiteError, match=rf"^{path}:3: controllers\[1\] 'static:degree=zero': controller 'static'"):
        SuiteRequest.from_file(path)
    path.write_text("controllers: [threshold]\nworkloads: [step]\nslo_target: 2\n")
    with pytest.raises(SuiteError, match=rf"^{path}:3: slo_target: must be <= 1.0, got 2.0$"):
        SuiteRequest.from_file(path)
    path.write_text("controllers: [threshold\n")
    with pytest.raises(SuiteError, match=rf"^{path}:2: not valid YAML"):
        SuiteRequest.from_file(path)


def test_the_nightly_suite_in_the_repository_is_valid_and_can_detect_a_difference():
    suite = SuiteRequest.from_file(Path(REPO_ROOT, "suites", "nightly.yaml"))
    assert len(suite.seeds) >= 4, "with fewer seeds no difference is ever significant"


def test_variants_keep_commas_inside_mappings():
    assert parse_variant("static:degree=1,degrees={enrich: 3, sink: 2}") == (
        "static", ["degree=1", "degrees={enrich: 3, sink: 2}"])


def test_a_suite_file_must_come_from_an_allowed_folder(tmp_path, monkeypatch):
    """The nightly DAG's `suite` Param is typed by whoever triggers a run: it may name the project's suites, not any
    file the workers can read ('..' and symbolic links are resolved first); a deployment allows other folders."""
    import pytest

    from analysis.orchestration import SUITE_DIRS_ENV, suite_file
    from analysis.suite import SuiteError

    monkeypatch.delenv(SUITE_DIRS_ENV, raising=False)
    assert suite_file("suites/nightly.yaml").seeds == (1, 2, 3, 4)
    own = tmp_path / "mine.yaml"
    own.write_text("controllers: [static]\nworkloads: [step]\nseeds: [1]\n")
    for outside in (str(own), "suites/../README.md", "/etc/passwd"):
        with pytest.raises(SuiteError, match="is outside the folders suites may come from"):
            suite_file(outside)
    link = tmp_path / "allowed" / "link.yaml"
    link.parent.mkdir()
    link.symlink_to("/etc/passwd")
    monkeypatch.setenv(SUITE_DIRS_ENV, str(tmp_path / "allowed"))
    with pytest.raises(SuiteError, match="is outside"):
        suite_file(str(link))
    (tmp_path / "allowed" / "mine.yaml").write_text(own.read_text())
    assert suite_file(str(tmp_path / "allowed" / "mine.yaml")).variants == ("static",)


def test_a_suite_asking_for_the_oracle_gets_the_stores_latest_calibration(tmp_path):
    import yaml
    from mlflow.tracking import MlflowClient

    from analysis.orchestration import with_oracle
    from tests.analysis.test_tuning import CALIBRATION

    request = SuiteRequest.from_mapping({"controllers": ["ds2"], "workloads": ["step"], "include_oracle": True})
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    exp = client.create_experiment("e", artifact_location=(tmp_path / "a").as_uri())
    with pytest.raises(SuiteError, match=r"include_oracle: no calibration in .*python -m jobs.calibrate"):
        with_oracle(request, uri)
    run = client.create_run(exp, tags={"kind": "calibration"}).info.run_id
    path = tmp_path / "oracle.yaml"
    params = {k: v for k, v in CALIBRATION.items() if k != "calibration_run"}
    path.write_text(yaml.safe_dump({"controller": "oracle", "params": params}))
    client.log_artifact(run, str(path), "calibration")
    client.set_terminated(run, "FINISHED")
    added = with_oracle(request, uri)
    assert added.variants[0] == "ds2" and added.variants[1].startswith("oracle:service_s={")
    assert f"calibration_run={run}" in added.variants[1] and "headroom" not in added.variants[1]
    assert not added.include_oracle and with_oracle(added, uri) == added  # added once
    with pytest.raises(SuiteError, match=r"include_oracle: expected true or false, got 'yes'"):
        SuiteRequest.from_mapping({"controllers": ["ds2"], "workloads": ["step"], "include_oracle": "yes"})


def test_the_bursty_suite_in_the_repository_is_valid():
    from workloads.traces import traces_dir

    if not (traces_dir() / "google2011_task_events").exists():
        pytest.skip(f"the bursty suite replays real traces; none at {traces_dir()} (set ELASTIC_TRACES_DIR)")
    request = SuiteRequest.from_file(REPO_ROOT / "suites" / "bursty.yaml")
    assert request.include_oracle and len(request.workloads) == 5 and request.seeds == (1, 2, 3)
    # every controller that wears the guard layer on local Spark, with it and as published
    assert {f"{name}{suffix}" for name in ("ds2", "threshold", "autoscale", "seep-detector", "seep-policy")
            for suffix in ("", ":guards=false")} <= set(request.variants)
    # the load predictors' suite replays the same workloads, without the oracle, at the same SLO
    predictors = SuiteRequest.from_file(REPO_ROOT / "suites" / "bursty_predictors.yaml")
    assert predictors.workloads == request.workloads and not predictors.include_oracle
    assert set(predictors.variants) == {  # both readings of AUTOSCALE: the paper's tables alone, and the guard layer
        "autoscale:guards=false", "autoscale:guards=false,predictor=registry",
        "autoscale:guards=false,predictor=registry,predictor_alias=conservative",
        "autoscale", "autoscale:predictor=registry", "autoscale:predictor=registry,predictor_alias=conservative"}
    assert (predictors.slo_latency_s, predictors.duration_s) == (request.slo_latency_s, request.duration_s)
    # the held-out traces: other workloads, the same rule and judgement, each one replaying 2,000 ev/s on average
    heldout = SuiteRequest.from_file(REPO_ROOT / "suites" / "bursty_heldout.yaml")
    assert heldout.include_oracle and not set(heldout.workloads) & set(request.workloads)
    assert (heldout.slo_latency_s, heldout.slo_target, heldout.duration_s, heldout.seeds) == \
        (request.slo_latency_s, request.slo_target, request.duration_s, request.seeds)
    for name in heldout.workloads:
        spec = load_workload(name)
        assert spec.streams[0].trace.mean_rate == 2000 and spec.duration_s == request.duration_s


def test_the_demo_runs_a_suite_file_or_part_of_it(tmp_path):
    from argparse import Namespace

    from analysis.demo import _request

    suite = tmp_path / "s.yaml"
    suite.write_text("controllers: [static, threshold]\nworkloads: [step, ramp]\nseeds: [1, 2, 3]\nduration_s: 20\n")
    args = Namespace(suite=str(suite), seeds="2", workloads="ramp", controllers=None, spark_query=None)
    request = _request(args, f"sqlite:///{tmp_path}/m.db")
    assert request.cases() == [Case("static", "ramp", 2), Case("threshold", "ramp", 2)]
    args.controllers = "threshold"
    assert _request(args, "sqlite:///unused.db").cases() == [Case("threshold", "ramp", 2)]
    assert request.duration_s == 20
    for seeds, workloads, problem in (("4", None, "--seeds: [4] not among the suite's seeds [1, 2, 3]"),
                                      ("a", None, "--seeds 'a': expected comma-separated integers"),
                                      (None, "flash", "--workloads: ['flash'] not among")):
        with pytest.raises(SuiteError, match=problem.replace("[", r"\[")):
            _request(Namespace(suite=str(suite), seeds=seeds, workloads=workloads, controllers=None, spark_query=None),
                     "sqlite:///unused.db")


def test_a_variant_may_host_a_placement_controller_after_a_plus():
    from analysis.suite import Case, split_placement

    assert split_placement("threshold:cooldown_s=4+sousa:sensitivity=0.25") == ("threshold:cooldown_s=4",
                                                                               "sousa:sensitivity=0.25")
    assert split_placement("seep-policy:policy={a: 1+2}") == ("seep-policy:policy={a: 1+2}", None)
    request = SuiteRequest.from_mapping({"controllers": ["static:degrees={aggregate: 4}+souravlas:share=headroom"],
                                         "workloads": ["step"], "seeds": [1]}, "s.yaml")
    args = Case(request.variants[0], "step", 1).run_args(request, experiment="e", tracking_uri="u",
                                                         parent_run_id="p")
    assert args[args.index("--controller") + 1] == "static"
    assert args[args.index("--placement") + 1] == "souravlas"
    assert args[args.index("--placement-param") + 1] == "share=headroom"
    with pytest.raises(SuiteError, match="placement controller 'sousa': parameter 'sensitivity' must be > 0"):
        SuiteRequest.from_mapping({"controllers": ["static+sousa:sensitivity=0"], "workloads": ["step"],
                                   "seeds": [1]}, "s.yaml")


def test_a_suite_names_its_topology_and_an_unknown_one_is_refused():
    request = SuiteRequest.from_mapping({"controllers": ["static"], "workloads": ["step"], "seeds": [1],
                                         "topology": "keyed-heavy"}, "s.yaml")
    args = request.cases()[0].run_args(request, experiment="e", tracking_uri="u", parent_run_id="p")
    assert args[args.index("--topology") + 1] == "keyed-heavy"
    with pytest.raises(SuiteError, match="s.yaml.topology: topology 'nope' is neither"):
        SuiteRequest.from_mapping({"controllers": ["static"], "workloads": ["step"], "seeds": [1],
                                   "topology": "nope"}, "s.yaml")
    assert SuiteRequest.from_file(REPO_ROOT / "suites" / "placement.yaml").topology == "keyed-heavy"


def test_a_suite_may_cap_what_a_batch_reads_and_a_negative_cap_is_refused():
    request = SuiteRequest.from_mapping({"controllers": ["ds2"], "workloads": ["step"], "seeds": [1],
                                         "max_events_per_batch": 30000}, "s.yaml")
    args = request.cases()[0].run_args(request, experiment="e", tracking_uri="u", parent_run_id="p")
    assert args[args.index("--max-events-per-batch") + 1] == "30000"
    default = SuiteRequest.from_mapping({"controllers": ["ds2"], "workloads": ["step"], "seeds": [1]}, "s.yaml")
    assert "--max-events-per-batch" not in default.cases()[0].run_args(default, experiment="e", tracking_uri="u",
                                                                      parent_run_id="p")
    with pytest.raises(SuiteError, match="max_events_per_batch: must be >= 0"):
        SuiteRequest.from_mapping({"controllers": ["ds2"], "workloads": ["step"], "seeds": [1],
                                   "max_events_per_batch": -5}, "s.yaml")


def test_a_suite_of_queries_runs_each_case_once_per_query_and_names_a_bad_one():
    request = SuiteRequest.from_file(REPO_ROOT / "suites" / "nexmark.yaml")
    cases = request.cases()
    assert len(cases) == 8 * 2 * 3 and {c.query for c in cases} == set(request.queries)
    case = next(c for c in cases if c.query == "nexmark:q5" and c.variant == "ds2")
    args = case.run_args(request, experiment="e", tracking_uri="sqlite:///x.db", parent_run_id="p")
    assert args[args.index("--query") + 1] == "nexmark:q5"
    assert case.label() == f"{case.workload}.nexmark-q5"  # the runs' workload tag: compared per query
    with pytest.raises(SuiteError) as err:
        SuiteRequest.from_mapping({"controllers": ["static:degrees={enrich: 3}"], "workloads": ["step"],
                                   "queries": ["nexmark:q1", "nexmark:q6"]})
    message = str(err.value)
    assert "params.queries[1]: " in message and "has no function 'q6'" in message
    assert "unknown operator" in message or "enrich" in message  # q1 has no operator 'enrich'


def test_a_suite_of_native_queries_runs_each_case_by_restart_and_names_what_cannot_run():
    request = SuiteRequest.from_mapping({"controllers": ["static:degree=2", "threshold"], "workloads": ["step"],
                                         "seeds": [1, 2], "spark_queries": ["native:windowed_count", "native:q5"]})
    cases = request.cases()
    assert len(cases) == 2 * 2 * 2 and {c.spark_query for c in cases} == {"native:windowed_count", "native:q5"}
    assert all(c.query is None for c in cases)  # no benchmark-topology cases beside the native ones
    case = next(c for c in cases if c.spark_query == "native:q5")
    args = case.run_args(request, experiment="e", tracking_uri="sqlite:///x.db", parent_run_id="p")
    assert args[args.index("--spark-query") + 1] == "native:q5" and "--query" not in args
    assert case.label() == "step.native-q5"
    with pytest.raises(SuiteError) as err:
        SuiteRequest.from_mapping({"controllers": ["static:degree=1,degrees={enrich: 3}"], "workloads": ["step"],
                                   "spark_queries": ["native:windowed_count", "native:q9", 3],
                                   "include_oracle": True}, "s.yaml")
    message = str(err.value)
    assert "s.yaml.spark_queries: expected a list of MODULE:FUNCTION references" in message
    with pytest.raises(SuiteError) as err:
        SuiteRequest.from_mapping({"controllers": ["static:degree=1,degrees={enrich: 3}"], "workloads": ["step"],
                                   "spark_queries": ["native:windowed_count", "native:q9"],
                                   "include_oracle": True}, "s.yaml")
    message = str(err.value)
    assert "s.yaml.spark_queries[1]: " in message and "has no function 'q9'" in message
    assert "s.yaml.include_oracle: " in message
    assert "enrich" in message  # a native query's one operator is `query`


def test_a_suite_may_hold_laboratory_and_native_queries_side_by_side():
    request = SuiteRequest.from_mapping({"controllers": ["static:degree=2"], "workloads": ["step"],
                                         "queries": ["nexmark:q1"], "spark_queries": ["native:q7"]})
    assert [(c.query, c.spark_query) for c in request.cases()] == [("nexmark:q1", None), (None, "native:q7")]


def test_the_native_suite_in_the_repository_is_valid():
    from workloads.traces import traces_dir

    if not (traces_dir() / "google2011_task_events").exists():
        pytest.skip(f"the native suite replays real traces; none at {traces_dir()} (set ELASTIC_TRACES_DIR)")
    request = SuiteRequest.from_file(REPO_ROOT / "suites" / "native.yaml")
    assert request.spark_queries == ("native:windowed_count",) and not request.queries
    assert all(case.spark_query == "native:windowed_count" for case in request.cases())
    assert len(request.cases()) == len(request.variants) * len(request.workloads) * len(request.seeds) == 24


def test_a_suite_on_kafka_gives_its_runs_the_source_and_spark_submit_the_connector():
    request = SuiteRequest.from_mapping({"controllers": ["static"], "workloads": ["step"], "source": "kafka",
                                         "kafka_bootstrap": "kafka:9092"})
    args = request.cases()[0].run_args(request, experiment="e", tracking_uri="sqlite:///x.db", parent_run_id="p")
    assert args[args.index("--source") + 1] == "kafka" and args[args.index("--kafka-bootstrap") + 1] == "kafka:9092"
    replay = SuiteRequest.from_mapping({"controllers": ["static"], "workloads": ["step"]})
    replay_args = replay.cases()[0].run_args(replay, experiment="e", tracking_uri="sqlite:///x.db", parent_run_id="p")
    assert "--source" not in replay_args and submit_jars(replay_args) is None
    with pytest.raises(SuiteError, match="source.*must be one of replay, kafka, got 'pulsar'"):
        SuiteRequest.from_mapping({"controllers": ["static"], "workloads": ["step"], "source": "pulsar"})
    from deploy.jars import JarsError

    try:
        jars = submit_jars(args)
    except JarsError as exc:  # never resolved here (make services resolves them): the error says so
        assert "spark-kafka" in str(exc)
    else:
        assert "spark-sql-kafka-0-10_2.13-4.2.0.jar" in jars
