"""`make airflow-stop` ends every process `make airflow` began. A stand-in for `airflow standalone` (no Airflow
needed): a leader that exits at once on SIGINT, leaving children that ignore SIGINT and SIGTERM, as Airflow's
scheduler and executor workers did; they were re-parented to init and kept running after `stop` said "stopped"."""
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from benchmarks.faults import STUBBORN_TREE
from deploy import local_stack


@pytest.fixture()
def stubborn_stack(tmp_path, monkeypatch):
    """The stand-in started as `make airflow` starts Airflow (own session, pid file): (leader, children's pids)."""
    monkeypatch.setattr(local_stack, "STACK", tmp_path)
    leader = subprocess.Popen([sys.executable, "-c", STUBBORN_TREE], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    children = [int(pid) for pid in leader.stdout.readline().split()]
    (tmp_path / "airflow.pid").write_text(str(leader.pid))
    yield leader, children
    for pid in children + [leader.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_stop_ends_the_leader_and_the_children_that_ignore_sigterm(stubborn_stack, tmp_path, capsys):
    leader, children = stubborn_stack
    assert len(local_stack._members("airflow")) == 4
    code = local_stack.stop(escalation=((signal.SIGINT, 2.0), (signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)))
    leader.wait(timeout=10)
    assert code == 0
    out = capsys.readouterr().out
    assert "stopped airflow: 4 process(es), with SIGINT then SIGTERM then SIGKILL" in out, out
    for pid in children:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, pid
    assert not (tmp_path / "airflow.pid").exists()


def test_start_refuses_while_processes_of_an_earlier_start_are_left(stubborn_stack, capsys):
    leader, children = stubborn_stack
    leader.send_signal(signal.SIGINT)  # the leader is gone, its children are not
    leader.wait(timeout=10)
    time.sleep(0.2)
    assert local_stack.start() == 1
    err = capsys.readouterr().err
    assert "left from an earlier start are still running" in err and str(children[0]) in err
