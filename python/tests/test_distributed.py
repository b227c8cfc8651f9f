"""torch.distributed on the CPU: two gloo processes (dist_worker.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")

HERE = Path(__file__).resolve().parent


def ranks(tmp: Path, scenario: str, generated: Path, name: str, world: int = 2) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), str(HERE)]))
    rdv = tmp / f"rdv-{scenario}"
    procs = [subprocess.Popen([sys.executable, str(HERE / "dist_worker.py"), str(r), str(world), str(rdv), scenario,
                               str(tmp), str(generated), name], env=env, stderr=subprocess.PIPE)
             for r in range(world)]
    errs = [p.communicate(timeout=300)[1].decode() for p in procs]
    for p, e in zip(procs, errs):
        assert p.returncode == 0, e


# The coordinates each rank owns: half each, or, for the optimizers with
# per-tensor norms (lamb, lars), whole parameters — the conv's 27 + 3 on
# rank 0 (30 is the parameter end nearest 560), the linear's 1080 + 10 on 1.
OWN = {"fiber": (560, 560), "dp_adamw": (560, 560), "lamb": (30, 1090), "lars": (30, 1090)}


def test_lines_sharded_match_one_process(tmp_path):
    """States per row and per column under ZeRO: each rank steps its whole
    parameters on the reference, and its parameters, states and line states
    agree bit for bit with one process's."""
    from test_lines import FACTORED_ADAM
    dsl = tmp_path / "factored_adam.dsl"
    dsl.write_text(FACTORED_ADAM)
    ranks(tmp_path, "sharded", tmp_path, str(dsl))
    for r in range(2):
        same_params, same_states, own, steps = np.load(tmp_path / f"sharded-{r}.npy")
        assert same_params and same_states and steps == 20, f"rank {r} differs from the unsharded step"
        assert own == (30, 1090)[r]


@pytest.mark.parametrize("name", list(OWN))
def test_sharded_step_matches_one_process(name, generated, tmp_path):
    ranks(tmp_path, "sharded", generated, name)
    got = [np.load(tmp_path / f"sharded-{r}.npy") for r in range(2)]
    for r, (same_params, same_states, own, steps) in enumerate(got):
        assert same_params and same_states, f"rank {r} differs from the unsharded step"
        assert steps == 20
    assert (got[0][2], got[1][2]) == OWN[name]


def test_bfloat16_sharded_matches_one_process(generated, tmp_path):
    ranks(tmp_path, "bf16", generated, "dp_adamw")
    for r in range(2):
        same_params, bf16, steps = np.load(tmp_path / f"bf16-{r}.npy")
        assert same_params and bf16 and steps == 5, f"rank {r}: same {same_params}, bfloat16 {bf16}, steps {steps}"


@pytest.mark.parametrize("name", ["dp_adamw", "lamb"])
def test_clip_groups_sharded_match_one_process(name, generated, tmp_path):
    ranks(tmp_path, "clip_groups", generated, name)
    for r in range(2):
        same_params, steps = np.load(tmp_path / f"clip_groups-{r}.npy")
        assert same_params and steps == 5, f"rank {r}: same {same_params}, steps {steps}"


def test_secure_ranks_share_rank_0s_key(generated, tmp_path):
    ranks(tmp_path, "secure", generated, "dp_adamw")
    for r in range(2):
        same_key, same_params, steps = np.load(tmp_path / f"secure-{r}.npy")
        assert same_key, "the ranks hold different secure keys"
        assert same_params, f"rank {r}'s sharded secure steps differ from the unsharded ones under the same key"
        assert steps == 5


def test_training_is_deterministic(generated, tmp_path):
    runs = []
    for i in range(2):
        d = tmp_path / f"run{i}"
        d.mkdir()
        ranks(d, "training", generated, "fiber")
        runs.append([np.load(d / f"train-{r}.npy") for r in range(2)])
        for r in range(2):
            same_seed, skipped, refused, steps = np.load(d / f"meta-{r}.npy")
            assert same_seed, "the ranks drew different secret seeds"
            assert skipped == 1, "a NaN gradient on one rank must skip the step on both"
            assert refused == 2, "a NaN example on one rank must fail privatize, and the step, on both"
            assert steps == 8
    for r in range(2):
        assert runs[0][r].tobytes() == runs[0][0].tobytes(), "the ranks' parameters differ"
        assert runs[1][r].tobytes() == runs[0][r].tobytes(), "two runs differ"
