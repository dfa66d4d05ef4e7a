"""Promotion against a real MLflow tracking store and Model Registry (SQLite), and the production start that loads
the champion. The suites are fabricated runs (known answers), recorded as jobs.run records them."""
import subprocess
import sys
import threading

import pytest
from mlflow.tracking import MlflowClient

import controllers
from benchmarks.fabricated_suites import CHEAP, DEAR, record_suite
from analysis.promote import LOCK_SUFFIX, PromotionBusy, promote_suite, promotion_lock
from jobs.champion import CHAMPION_ALIAS, ChampionNotFound, load_champion, model_name
from jobs.config import InputError
from jobs.recording.recorder import REPO_ROOT
from jobs.run import build_parser, config_from_args

MODEL = model_name("step")
WINNER = controllers.config_label(*CHEAP[:2])  # threshold:cooldown_s=6.0


@pytest.fixture()
def uri(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    client = MlflowClient(uri)
    client.create_experiment("promo", artifact_location=(tmp_path / "art").as_uri())
    return uri


def versions(uri):
    return MlflowClient(uri).search_model_versions(f"name = '{MODEL}'")


def test_promotion_registers_the_winner_and_a_production_start_loads_that_exact_config(uri):
    parent = record_suite(uri, [CHEAP, DEAR])
    [decision] = promote_suite(uri, parent)
    assert decision.promote and decision.challenger == WINNER and decision.new_version == "1"
    client = MlflowClient(uri)
    champion = client.get_model_version_by_alias(MODEL, CHAMPION_ALIAS)
    assert str(champion.version) == "1" and champion.tags["config"] == WINNER
    assert champion.run_id == parent
    assert client.get_run(parent).data.tags["promotion.step"].startswith(f"step: PROMOTE {WINNER}")

    loaded = load_champion(uri, "step")
    assert (loaded.controller, loaded.params) == ("threshold", controllers.validate_config("threshold",
                                                                                            {"cooldown_s": 6.0}))
    config = config_from_args(build_parser().parse_args(["--champion", "step"])).validate()
    assert config.controller == "threshold" and config.controller_params["cooldown_s"] == 6.0
    assert config.workload == "step" and config.tags == {"champion.model": MODEL, "champion.version": "1"}


def test_re_running_the_same_analysis_promotes_nothing_new(uri):
    parent = record_suite(uri, [CHEAP, DEAR])
    promote_suite(uri, parent)
    [again] = promote_suite(uri, parent)
    assert not again.promote and again.reasons[0] == f"the champion {WINNER} ranks first"
    assert len(versions(uri)) == 1


def test_a_challenger_with_a_failed_run_is_never_promoted(uri):
    parent = record_suite(uri, [CHEAP, DEAR], failed_seeds={WINNER: [2]})
    [decision] = promote_suite(uri, parent)
    assert decision.challenger == "static:degree=3", "the complete configuration, not the one with a FAILED seed"
    assert f"not a candidate: {WINNER} (1 run(s) FAILED (seeds 2))" in decision.reasons


def test_two_concurrent_promotions_leave_one_champion_and_no_half_state(uri):
    champion_suite = record_suite(uri, [DEAR])
    promote_suite(uri, champion_suite)  # static:degree=3 is champion (version 1)
    a, b = record_suite(uri, [CHEAP, DEAR]), record_suite(uri, [CHEAP, DEAR])
    cmd = [sys.executable, "-m", "analysis.promote", "--tracking-uri", uri, "--parent-run-id"]
    procs = [subprocess.Popen(cmd + [p], cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for p in (a, b)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    said = sorted(out.strip() for out, _ in outputs)
    assert said[0].startswith(f"step: PROMOTE {WINNER} over static:degree=3 as version 2"), said
    assert said[1].startswith(f"step: keep {WINNER} — the champion {WINNER} ranks"), said
    assert len(versions(uri)) == 2
    assert MlflowClient(uri).get_model_version_by_alias(MODEL, CHAMPION_ALIAS).version == 2
    assert not MlflowClient(uri).search_registered_models(f"name = '{MODEL}{LOCK_SUFFIX}'")


def test_a_held_lock_makes_the_other_promotion_wait_and_a_stale_one_is_broken(uri):
    client = MlflowClient(uri)
    with promotion_lock(client, MODEL):
        with pytest.raises(PromotionBusy):
            with promotion_lock(client, MODEL, wait_s=0.5):
                pass
        released = threading.Event()

        def second():
            with promotion_lock(MlflowClient(uri), MODEL, wait_s=30):
                released.set()

        waiter = threading.Thread(target=second)
        waiter.start()
        assert not released.wait(1.0), "the second promotion must wait while the lock is held"
    waiter.join(30)
    assert released.is_set()
    client.create_registered_model(MODEL + LOCK_SUFFIX)  # left behind by a crashed promoter
    with promotion_lock(client, MODEL, wait_s=5, stale_s=0.0):
        pass


def test_a_production_start_without_a_champion_says_what_to_do(uri, capsys):
    with pytest.raises(ChampionNotFound, match="nothing has been promoted for workload class 'step'"):
        load_champion(uri, "step")
    with pytest.raises(InputError, match="--champion step: .*analysis.promote"):
        config_from_args(build_parser().parse_args(["--champion", "step"]))
    with pytest.raises(InputError, match="drop --controller, --param"):
        config_from_args(build_parser().parse_args(["--champion", "step", "--controller", "static",
                                                    "--param", "degree=2"]))
