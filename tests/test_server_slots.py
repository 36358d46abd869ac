"""The REST server's worker processes (jupyter/server.py Workers): one job each at a time, so that stopping the one
that holds a stuck job stops nothing else; replaced when they end; a long job set aside while others wait. And the
budget of a request reaching every call it makes (runner.deadline). No timings asserted: events and identities."""

import os
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

from jupyter_hwsim import Scenario, estimate, simulate
from jupyter_hwsim.core.errors import HwsimError
from jupyter_hwsim.jupyter.server import HwsimServer, Workers
from jupyter_hwsim.runner import deadline


def _pid_after(seconds: float) -> int:
    """A job for a worker process: it sleeps, then says which process ran it."""
    time.sleep(seconds)
    return os.getpid()


def _until(ready, what: str, limit_s: float = 120.0) -> None:
    for _ in range(int(limit_s / 0.05)):
        if ready():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what} not ready after {limit_s:g} s")


@pytest.fixture
def workers():
    w = Workers(HwsimServer(max_workers=2))
    if w.size < 2:
        pytest.skip("one core: a single worker process")
    w.long_s = float("inf")  # set aside only where a test asks
    w.start()
    _until(lambda: len(w.slots) == 2 and all(s.ready for s in w.slots), "the worker processes")
    yield w
    w.shutdown()


def test_stopping_the_worker_of_a_stuck_job_leaves_the_other_worker_and_its_job_alone(workers):
    stuck = workers.run(_pid_after, 60)
    _until(stuck.running, "the stuck job")
    beside = workers.run(_pid_after, 2.0)
    _until(beside.running, "the job beside it")
    held, other = stuck.hwsim_slot, beside.hwsim_slot
    assert held is not other and held.job is stuck and other.job is beside
    pid = other.pid
    workers.reap(stuck)  # its budget is long past: its worker process is stopped
    with pytest.raises(BrokenProcessPool):
        stuck.result(timeout=30)
    # the job beside it finished where it was running: not stopped, not run again elsewhere
    assert beside.result(timeout=60) == pid
    assert other in workers.slots and other.pid == pid and other.alive()
    assert held not in workers.slots
    _until(lambda: not held.alive(), "the stopped process to end")
    _until(lambda: all(s.ready for s in workers.slots), "the new worker process")
    new = next(s for s in workers.slots if s is not other)
    assert new.pid not in (held.pid, pid)
    # the next two jobs, at once: one in each worker process
    both = [workers.run(_pid_after, 1.0) for _ in range(2)]
    assert {job.result(timeout=60) for job in both} == {new.pid, pid}


def test_a_worker_process_killed_from_outside_is_replaced_and_the_other_is_not_touched(workers):
    victim, other = workers.slots
    pid = other.pid
    victim.process().kill()  # while idle: nothing fails, the watch notices
    _until(lambda: victim not in workers.slots and all(s.ready for s in workers.slots), "the new worker process")
    assert other in workers.slots and other.pid == pid
    # killed under a job: the job fails (the server runs its request once more), and its slot gets a new process
    job = workers.run(_pid_after, 60)
    _until(job.running, "the job")
    slot = job.hwsim_slot
    slot.process().kill()
    with pytest.raises(BrokenProcessPool):
        job.result(timeout=30)
    _until(lambda: slot not in workers.slots and all(s.ready for s in workers.slots), "the second new worker")
    assert len(workers.slots) == 2 and all(s.alive() for s in workers.slots)


def test_queued_jobs_wait_for_a_free_worker_not_behind_a_busy_one(workers):
    """One job per worker process at a time: a job queued while both are busy goes to the first that is free,
    never behind the one that stays busy."""
    long = workers.run(_pid_after, 60)
    _until(long.running, "the long job")
    short = [workers.run(_pid_after, 0.2) for _ in range(4)]
    free = next(s for s in workers.slots if s is not long.hwsim_slot)
    assert [job.result(timeout=60) for job in short] == [free.pid] * 4
    assert not long.done()
    workers.reap(long)


def test_a_long_job_is_set_aside_while_others_wait(workers):
    """A job that has run long_s while another waits for a worker goes on at the lowest CPU priority, out of its
    slot, where a new process starts: the one that waits runs there. A set-aside job that finishes returns its
    result, and its process ends; one that is reaped (its 504) is stopped."""
    workers.long_s = 0.5
    a = workers.run(_pid_after, 60)
    b = workers.run(_pid_after, 8)
    _until(lambda: a.running() and b.running(), "two long jobs")
    old = {a: a.hwsim_slot, b: b.hwsim_slot}
    pids = {job: slot.pid for job, slot in old.items()}
    c = workers.run(_pid_after, 0)  # it waits: both workers are busy
    _until(lambda: workers.is_aside(a) and workers.is_aside(b), "the long jobs set aside")
    if hasattr(os, "getpriority"):
        assert os.getpriority(os.PRIO_PROCESS, pids[a]) == 19
    ran = c.result(timeout=120)
    assert ran in {s.pid for s in workers.slots} and ran not in pids.values()  # in a new worker process
    assert b.result(timeout=120) == pids[b]  # it finished, in its own process
    _until(lambda: not old[b].alive() and not workers.is_aside(b), "the finished set-aside process to end")
    assert old[a].alive() and not a.done()
    workers.reap(a)
    with pytest.raises(BrokenProcessPool):
        a.result(timeout=30)
    assert not workers.aside
    _until(lambda: not old[a].alive(), "the stopped process to end")
    assert len(workers.slots) == 2 and all(s.ready and s.alive() for s in workers.slots)


def test_a_request_deadline_stops_every_call_made_under_it():
    """runner.deadline: the REST server's budget for a request reaches the calls it makes (its charts' estimates
    included), checked between the phases of each run. Outside it, nothing changes."""
    from jupyter_hwsim.jupyter import charts

    s = Scenario(workload="resnet50", loader_workers=5)
    with deadline(time.time() - 1.0):
        with pytest.raises(HwsimError) as err:
            estimate(s, suggest=False)
        assert err.value.field == "workload" and "budget" in str(err.value)
        with pytest.raises(HwsimError) as err:
            simulate(s, suggest=False)
        assert err.value.field == "steps" and "budget" in str(err.value)
        with pytest.raises(HwsimError):
            charts.curve_points(s.replace(loader_workers=6))
        with pytest.raises(HwsimError) as err:
            estimate(s)
        assert "budget" in str(err.value)
    with deadline(time.time() + 600.0):
        assert estimate(s, suggest=False).throughput == estimate(s, suggest=False).throughput > 0
    assert charts.curve_points(s.replace(loader_workers=6))  # nothing cached from the stopped one


def test_a_simulation_counts_its_step_costs_in_its_budget(monkeypatch):
    """A model's step costs come before the event loop, whose budget check counts from its own start: a huge
    per-step cost ran unchecked. The run now checks its call's budget after them. (Here the step costs take 0.5 s,
    the event loop of 10 steps milliseconds.)"""
    from jupyter_hwsim.kinds.pipeline import PipelineKind

    prepare = PipelineKind.prepare

    def slow_prepare(self, m):
        time.sleep(0.5)
        return prepare(self, m)

    monkeypatch.setattr(PipelineKind, "prepare", slow_prepare)
    with pytest.raises(HwsimError) as err:
        simulate({"workload": "resnet50", "steps": 10}, suggest=False, budget_s=0.4)
    assert err.value.field == "steps" and "budget" in str(err.value)
