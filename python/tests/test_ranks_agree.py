"""Ranks that differ in what they open fail fast, on every rank, saying
which rank differs in what: two gloo processes (ranks_worker.py), rank 1
differing from rank 0 in one thing each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")

HERE = Path(__file__).resolve().parent
HANG = 90  # seconds: two ranks that open a small optimizer take a few; more is a hang
FAST = 20  # seconds from the constructor to the error on a busy machine: no rank waits out a timeout


def errors(tmp: Path, scenario: str, generated: Path) -> list[str]:
    """Each rank's error in scenario (rank 1 differing from rank 0), once
    both ranks are done, which must be soon."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), str(HERE)]))
    procs = [subprocess.Popen([sys.executable, str(HERE / "ranks_worker.py"), str(r), str(tmp / "rdv"), scenario,
                               str(tmp), str(generated)], env=env, stderr=subprocess.PIPE)
             for r in range(2)]
    try:
        errs = [p.communicate(timeout=HANG)[1].decode() for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.wait()
        pytest.fail(f"{scenario}: the ranks hung (still running after {HANG} s)")
    out = []
    for r, (p, e) in enumerate(zip(procs, errs)):
        assert p.returncode == 0, e
        got = json.loads((tmp / f"{scenario}-{r}.json").read_text())
        assert got["error"] is not None, f"{scenario}: rank {r} accepted what the other rank did not"
        assert got["seconds"] < FAST, f"{scenario}: rank {r} took {got['seconds']:.1f} s to raise"
        out.append(got["error"])
    return out


@pytest.mark.parametrize("scenario, says, unsaid", [
    ("seed_none_vs_int", "rank 1's seed is a fixed one, rank 0's is None", "42"),
    ("seeds_differ", "rank 1's seed differs from rank 0's", "42 43"),  # a seed undoes the noise: never shown
    ("lr_differs", "rank 1's lr of group 1 is 0.002, rank 0's is 0.001", ""),
    ("sizes_differ", "rank 1's layout (parameter shapes of group 0) is [[5, 6], [5], [5, 5], [5]], "
                     "rank 0's is [[5, 6], [5], [4, 5], [4]]", ""),
    ("options_differ", "rank 1's allow_unstable is True, rank 0's is False", ""),
    ("dp_differs", "rank 1's noise_multiplier is 0.5, rank 0's is 1.0", ""),
    ("secure_differs", "rank 1's noise_mode is 'secure', rank 0's is 'philox'", ""),
])
def test_a_difference_raises_on_every_rank(scenario, says, unsaid, generated, tmp_path):
    for r, e in enumerate(errors(tmp_path, scenario, generated)):
        assert e.startswith("FibergenError: fibergen: the ranks cannot "), f"rank {r}: {e}"
        assert says in e, f"rank {r}: {e}"
        assert not [w for w in unsaid.split() if w in e], f"rank {r}: {e}"


def test_a_rank_that_fails_fails_every_rank(generated, tmp_path):
    zero, one = errors(tmp_path, "fails_on_one_rank", generated)
    assert "no_such_hyper" in one and "rank 1 failed" not in one, one  # its own error
    assert zero.startswith("FibergenError: fibergen: the ranks cannot open the optimizer together: rank 1 failed: "), zero
    assert "no_such_hyper" in zero, zero
