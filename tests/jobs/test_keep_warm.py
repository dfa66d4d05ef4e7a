"""When the driver pings Spark's Python workers through a silence (jobs/keep_warm.py): after `interval_s` of no
batch, not while a batch runs or is about to, not before the first batch, and again only `interval_s` after a ping."""
import pytest

from jobs.keep_warm import SPARK_IDLE_CHECK_S, SPARK_IDLE_WORKER_TIMEOUT_S, KeepWarm
from params.run import RUN_SETTINGS


def warm(interval_s=30.0, clearance_s=4.0):
    calls = []
    return KeepWarm(lambda: calls.append(1), interval_s=interval_s, clearance_s=clearance_s), calls


def test_a_ping_after_the_interval_of_no_batch_and_the_next_one_an_interval_later():
    keep, calls = warm()
    assert not keep.tick(129.9, last_activity=100.0, batch_running=False, next_batch_in_s=None)
    assert keep.tick(130.0, last_activity=100.0, batch_running=False, next_batch_in_s=None)
    assert not keep.tick(150.0, last_activity=100.0, batch_running=False, next_batch_in_s=None)  # 20 s after it
    assert keep.tick(161.0, last_activity=100.0, batch_running=False, next_batch_in_s=50.0)
    assert len(calls) == 2 and keep.summary()["keep_warm_pings"] == 2.0


def test_no_ping_while_a_batch_runs_before_the_first_one_or_when_one_is_about_to_start():
    keep, calls = warm()
    assert not keep.tick(200.0, last_activity=100.0, batch_running=True, next_batch_in_s=None)
    assert not keep.tick(200.0, last_activity=None, batch_running=False, next_batch_in_s=None)
    assert not keep.tick(200.0, last_activity=100.0, batch_running=False, next_batch_in_s=3.9)  # within clearance
    assert keep.tick(200.0, last_activity=100.0, batch_running=False, next_batch_in_s=4.1)
    # a batch since the ping resets the clock as a ping does
    assert not keep.tick(240.0, last_activity=225.0, batch_running=False, next_batch_in_s=None)
    assert len(calls) == 1


def test_off_at_zero():
    keep, calls = warm(interval_s=0.0)
    assert not keep.tick(1e6, last_activity=0.0, batch_running=False, next_batch_in_s=None) and not calls


def test_the_setting_cannot_exceed_what_spark_s_idle_timeout_allows():
    """A ping must come before Spark's monitor, checking every 10 s, finds a minute of no activity: with a ping
    skipped once for a batch about to start (the clearance), the setting's maximum still leaves that margin."""
    declared = RUN_SETTINGS["keep_warm_s"]
    assert declared.maximum + SPARK_IDLE_CHECK_S < SPARK_IDLE_WORKER_TIMEOUT_S
    with pytest.raises(Exception, match="keep"):
        declared.check("run", "--keep-warm", 50.0)


class _Params:
    def __init__(self):
        self.logged = {}

    def log_params(self, params):
        self.logged.update(params)


@pytest.mark.parametrize("controller, params, expected", [
    ("ds2", {}, "every 30 s of no batch"),
    ("spark-dynamic-allocation", {}, "off: the controller changes executors"),
    ("executor-autoscaler", {}, "off: the controller changes executors"),
])
def test_the_run_keeps_warm_unless_its_controller_changes_executors(controller, params, expected):
    """A ping every half minute keeps every executor busy: Spark's dynamic allocation would never find one idle to
    release, and an executor controller's idle ones would stay."""
    import controllers
    from jobs.config import RunConfig
    from jobs.experiment import make_keep_warm
    from jobs.spark_session import controller_spark_settings

    built = controllers.build_controller(controller, params, ("parse", "enrich", "aggregate", "sink"), 8)
    recorder = _Params()
    keep = make_keep_warm(RunConfig(controller=controller, controller_params=params, workload="step"), built,
                          controller_spark_settings(built), spark=None, schedule_state="", recorder=recorder)
    assert recorder.logged["keep_warm"] == expected
    assert (keep is not None) == expected.startswith("every")
    off = make_keep_warm(RunConfig(controller="ds2", controller_params={}, workload="step", keep_warm_s=0.0),
                         built, {}, spark=None, schedule_state="", recorder=recorder)
    assert off is None and recorder.logged["keep_warm"] == "off"
