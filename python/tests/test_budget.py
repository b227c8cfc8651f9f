"""A privacy budget costs nothing per step: the runtime computes the ε at
each milestone of the schedule once, when the budget is set (in the
background), and the step path — privatize, the look-ahead point, the
observation, step — and spent() read that table."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

import fibergen.privacy
import fibergen.torch as ft


def test_budget_costs_no_composition_per_step(generated):
    torch.manual_seed(0)
    m = torch.nn.Linear(8, 2)
    ps = list(m.parameters())
    opt = ft.Optimizer([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.01}], generated / "fiber", seed=3)
    kw = dict(dataset_size=1000, batch_size=50, epochs=1)
    sigma = opt.set_budget(2.0, clip=1.0, **kw)
    steps = 20  # one milestone a step: the table holds 20 reports
    x = torch.randn(4, 8)
    for _ in range(steps):
        with opt.lookahead():
            look = [torch.stack([torch.autograd.grad(m(x[i:i + 1]).sum(), ps)[j] for i in range(4)]) for j in range(2)]
        cur = [torch.stack([torch.autograd.grad(m(x[i:i + 1]).sum(), ps)[j] for i in range(4)]) for j in range(2)]
        opt.observation()
        opt.privatize(cur, look)
        opt.step()
    eps, delta = opt.spent()
    want = fibergen.privacy.epsilon(sigma, **kw)
    assert want.steps == steps
    assert eps == pytest.approx(want.epsilon, rel=1e-12) and delta == want.delta
    # The table fills in the background, each milestone composed once, whatever the steps,
    # look-aheads, observations and reports asked: it ends at one evaluation per milestone.
    assert table_size(opt, steps) == steps
    for _ in range(5):
        opt.observation()
        opt.spent()
    assert opt._handle.spent()["evaluations"] == steps
    # What lookahead() and observation() read holds no ε, so they cannot wait on the accountant.
    assert "spent" not in opt._handle.info()


def table_size(opt: ft.Optimizer, want: int) -> int:
    """The compositions of the budget's table once it holds want entries
    (its computation in the background takes milliseconds here), or after
    a minute without: the table was not computed."""
    deadline = time.monotonic() + 60
    while (n := opt._handle.spent()["evaluations"]) < want and time.monotonic() < deadline:
        time.sleep(0.01)
    return n


def test_a_resume_tables_only_the_steps_ahead(generated):
    """A run resumed at step 15 of 20 computes the ε at the milestones from
    step 15 on (6 compositions, the horizon's among them), never those
    before it; set_budget and then load_state_dict with the same budget
    keeps the table set_budget computed. spent() is the saving run's."""
    kw = dict(clip=1.0, dataset_size=1000, batch_size=50, epochs=1)  # 20 steps, a milestone each

    def opened(seed: int) -> tuple[ft.Optimizer, list[torch.Tensor]]:
        torch.manual_seed(0)
        ps = list(torch.nn.Linear(8, 2).parameters())
        return ft.Optimizer(ps, generated / "dp_sgd", seed=seed), ps

    def saved(seed: int) -> tuple[ft.Optimizer, dict]:
        """A run of 15 steps and its state (each seed's is resumed once)."""
        opt, ps = opened(seed)
        opt.set_budget(2.0, **kw)
        for _ in range(15):
            for p in ps:
                p.grad.fill_(0.1)
            opt.trust_clipped_grad()
            opt.step()
        return opt, opt.state_dict()

    saver, sd = saved(3)
    fresh = opened(3)[0]
    fresh.load_state_dict(sd)
    assert table_size(fresh, 6) >= 6
    for _ in range(5):  # to the end of the schedule, as the saving run
        assert fresh.spent() == saver.spent()
        for opt in (fresh, saver):
            for p in opt._params():
                p.grad.fill_(0.1)
            opt.trust_clipped_grad()
            opt.step()
    assert fresh.spent() == saver.spent() and fresh._handle.spent()["evaluations"] == 6
    saver, sd = saved(4)
    budgeted = opened(4)[0]
    budgeted.set_budget(2.0, **kw)
    assert table_size(budgeted, 20) == 20
    budgeted.load_state_dict(sd)
    assert budgeted._handle.spent()["evaluations"] == 20 and budgeted.spent() == saver.spent()


BLT = (Path(__file__).resolve().parents[2] / "tests" / "testdata" / "dsl" / "blt.dsl").read_text()


def test_cyclic_budget_of_correlated_noise(tmp_path, generated):
    """A correlated-noise optimizer takes only fixed batches ("cyclic"): a
    Poisson budget is refused, saying why, and sets nothing; the cyclic one
    is the accountant's, the same σ for independent noise as
    fibergen.privacy's, a larger one for the BLT's correlated noise, whose
    sensitivity is larger; spent() grows to at most ε."""
    (tmp_path / "blt.dsl").write_text(BLT)
    params = [torch.nn.Parameter(torch.ones(3))]
    opt = ft.Optimizer(params, tmp_path / "blt.dsl", seed=1)
    kw = dict(clip=1.0, dataset_size=100, batch_size=10, epochs=2)
    with pytest.raises(ft.FibergenError, match="no amplification by sampling is claimed for correlated noise"):
        opt.set_budget(2.0, **kw)
    assert opt.sigma_w2 is None
    sigma = opt.set_budget(2.0, sampling="cyclic", **kw)
    white = ft.Optimizer([torch.nn.Parameter(torch.ones(3))], generated / "dp_sgd", seed=1)
    white_sigma = white.set_budget(2.0, sampling="cyclic", **kw)
    assert white_sigma == fibergen.privacy.sigma(2.0, sampling="cyclic", dataset_size=100, batch_size=10, epochs=2).sigma
    assert sigma > white_sigma
    spent = []
    for _ in range(20):
        params[0].grad = torch.full((3,), 0.5)
        opt.trust_clipped_grad()
        opt.step()
        spent.append(opt.spent()[0])
    assert spent == sorted(spent) and 0 < spent[0] and spent[-1] <= 2.0


def test_cyclic_batch_sampler():
    """Every index once per epoch, the same batches in the same order every
    epoch, the last batch short."""
    s = ft.CyclicBatchSampler(25, 10, torch.Generator().manual_seed(3))
    first, second = list(s), list(s)
    assert len(s) == 3 and first == second and [len(b) for b in first] == [10, 10, 5]
    assert sorted(i for b in first for i in b) == list(range(25))
    with pytest.raises(ValueError, match="batch_size 30: want 1 to the dataset_size 25"):
        ft.CyclicBatchSampler(25, 30)
