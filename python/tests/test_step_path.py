"""The step path (docs/python.md, "The cost of a step"): the hypers reach the
runtime when a param group changes them and only those given (the runtime
derives the others, as fiber_cosine's lr_min from lr), schedulers that
cycle betas[0], privatize's rows reused across steps of any batch size, and
the param groups' keys in one order after open and after a load."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import fibergen.torch as ft
from fibergen import FibergenError


def params(seed: int = 0) -> list[torch.nn.Parameter]:
    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Linear(5, 3))
    return list(m.parameters())


def bits(ps: list[torch.Tensor]) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1) for p in ps]).numpy().view(np.uint32).copy()


def runtime_hypers(opt: ft.Optimizer) -> dict[str, float]:
    return {h["name"]: h["value"] for h in opt._handle.info()["hypers"]}


def group_hypers(opt: ft.Optimizer, i: int) -> dict[str, float]:
    """Group i's hypers as the runtime steps it (the optimizer's for group 0)."""
    if i == 0:
        return runtime_hypers(opt)
    t = {t["name"]: t for t in opt._handle.info()["tensors"]}[f"group{i}"]
    return {h["name"]: h["value"] for h in t["hypers"]}


def trust_step(opt: ft.Optimizer, ps: list[torch.Tensor], t: int) -> None:
    g = torch.Generator().manual_seed(100 + t)
    for p in ps:
        p.grad.copy_(0.1 * torch.randn(p.shape, generator=g))
    opt.trust_clipped_grad()
    opt.step()


def opened(generated: Path, name: str, groups, **hypers) -> ft.Optimizer:
    opt = ft.Optimizer(groups, generated / name, seed=5, **hypers)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=16)
    return opt


@pytest.mark.parametrize("lr", [0.02, None])
def test_scheduler_lr_moves_the_derived_lr_min(generated, lr):
    """fiber_cosine's lr_min = lr / 100 is derived by the runtime: a
    scheduler's lr (to 0 at the end) moves it, and the param group shows it."""
    ps = params()
    opt = opened(generated, "fiber_cosine", ps, **({"lr": lr} if lr else {}))
    base = lr or 1e-3
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 1 - t / 3)
    for t in range(4):
        trust_step(opt, ps, t)
        assert runtime_hypers(opt)["lr"] == pytest.approx(base * (1 - t / 3), rel=1e-12, abs=0)
        assert runtime_hypers(opt)["lr_min"] == runtime_hypers(opt)["lr"] / 100
        assert opt.param_groups[0]["lr_min"] == runtime_hypers(opt)["lr_min"]
        sched.step()


def test_given_lr_min_stays_under_a_scheduler(generated):
    ps = params()
    opt = opened(generated, "fiber_cosine", ps, lr=0.02, lr_min=3e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for t in range(3):
        trust_step(opt, ps, t)
        sched.step()
    trust_step(opt, ps, 3)
    assert runtime_hypers(opt)["lr"] == 0.02 / 8 and runtime_hypers(opt)["lr_min"] == 3e-4


def test_groups_derive_their_own_lr_min(generated):
    """A group with its own lr derives its own lr_min in the runtime, and
    shows it; a scheduler's lr moves each group's."""
    ps = params()
    opt = opened(generated, "fiber_cosine", [{"params": ps[:2]}, {"params": ps[2:], "lr": 0.05}], lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
    trust_step(opt, ps, 0)
    assert group_hypers(opt, 1)["lr_min"] == 0.05 / 100 and opt.param_groups[1]["lr_min"] == 0.05 / 100
    assert opt._handle.info()["tensors"][1]["own"] == {"lr": 0.05}  # lr_min is derived, not set
    sched.step()
    trust_step(opt, ps, 1)
    for i, lr in enumerate((0.01, 0.05)):
        h = group_hypers(opt, i)
        assert h["lr"] == pytest.approx(lr * 0.1, rel=1e-12) and h["lr_min"] == h["lr"] / 100
        assert opt.param_groups[i]["lr_min"] == h["lr_min"]


def test_writing_the_derived_value_pins_it(generated):
    """lr_min written with the very value the runtime derived is given from
    then on: a later lr no longer moves it."""
    ps = params()
    opt = opened(generated, "fiber_cosine", ps, lr=0.02)
    trust_step(opt, ps, 0)
    opt.param_groups[0]["lr_min"] = opt.param_groups[0]["lr_min"]  # 0.02 / 100, as derived
    trust_step(opt, ps, 1)
    opt.param_groups[0]["lr"] = 0.01
    trust_step(opt, ps, 2)
    assert runtime_hypers(opt)["lr_min"] == 0.02 / 100 and opt.param_groups[0]["lr_min"] == 0.02 / 100


def test_group_lr_min_given_equal_to_group0s_derived_stays(generated):
    """A group's own lr_min is its own even where it equals the value the
    runtime derives for group 0 (1e-5 = 1e-3 / 100): it does not follow
    the group's own lr."""
    ps = params()
    opt = opened(generated, "fiber_cosine", [{"params": ps[:2]}, {"params": ps[2:], "lr": 1e-2, "lr_min": 1e-5}], lr=1e-3)
    trust_step(opt, ps, 0)
    assert group_hypers(opt, 1)["lr_min"] == 1e-5 and opt.param_groups[1]["lr_min"] == 1e-5
    assert group_hypers(opt, 0)["lr_min"] == 1e-5 and group_hypers(opt, 1)["lr"] == 1e-2


def test_writing_group0_leaves_the_other_groups(generated):
    """Writing group 0's lr by hand changes group 0 only, as in torch: a
    group that did not give lr keeps the one it had; so does a group
    whose weight decay group 0 gave and it did not."""
    ps = params()
    opt = opened(generated, "dp_adamw", [{"params": ps[:2], "weight_decay": 0.3}, {"params": ps[2:]}])
    trust_step(opt, ps, 0)
    default = opt.param_groups[1]["lr"]
    assert group_hypers(opt, 1)["wd"] == opt.defaults["wd"] == 0 and group_hypers(opt, 0)["wd"] == 0.3
    opt.param_groups[0]["lr"] = 0.5
    trust_step(opt, ps, 1)
    assert group_hypers(opt, 0)["lr"] == 0.5 and group_hypers(opt, 1)["lr"] == default
    assert opt.param_groups[1]["lr"] == default


def test_every_dict_write_reaches_the_runtime(generated):
    """|= and dict.update-like writes reach the runtime as group[k] = v
    does; removing a hyper is refused, another key is not."""
    ps = params()
    opt = opened(generated, "dp_adamw", ps)
    trust_step(opt, ps, 0)
    opt.param_groups[0] |= {"lr": 0.25, "betas": (0.8, 0.99)}
    trust_step(opt, ps, 1)
    assert {k: group_hypers(opt, 0)[k] for k in ("lr", "beta1", "beta2")} == {"lr": 0.25, "beta1": 0.8, "beta2": 0.99}
    for remove in (lambda g: g.pop("lr"), lambda g: g.__delitem__("weight_decay"), lambda g: g.popitem(), lambda g: g.clear()):
        with pytest.raises(TypeError, match="cannot be removed"):
            remove(opt.param_groups[0])
    opt.param_groups[0]["note"] = "mine"
    assert opt.param_groups[0].pop("note") == "mine" and group_hypers(opt, 0)["lr"] == 0.25


@pytest.mark.parametrize("name", ["dp_adamw", "fiber"])
def test_one_cycle_cycles_beta1_as_set_by_hand(generated, name):
    """OneCycleLR with cycle_momentum cycles betas[0], as for torch's Adam:
    the runtime gets beta1 (checked at each change) and the run is the one
    that sets lr and betas by hand to the same values."""
    ps = params()
    opt = opened(generated, name, ps)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=6, cycle_momentum=True,
                                                base_momentum=0.85, max_momentum=0.95)
    seen = []
    for t in range(5):
        seen.append((opt.param_groups[0]["lr"], opt.param_groups[0]["betas"]))
        trust_step(opt, ps, t)
        assert runtime_hypers(opt)["beta1"] == seen[-1][1][0]
        sched.step()
    assert len({b for _, (b, _) in seen}) > 2  # beta1 did cycle
    hand = params()
    opt2 = opened(generated, name, hand)
    for t, (lr, betas) in enumerate(seen):
        opt2.param_groups[0]["lr"], opt2.param_groups[0]["betas"] = lr, betas
        trust_step(opt2, hand, t)
    assert (bits(ps) == bits(hand)).all()


def test_one_cycle_beta1_out_of_range_is_refused(generated):
    ps = params()
    opt = opened(generated, "dp_adamw", ps)
    torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=4, base_momentum=0.9, max_momentum=1.0)
    assert opt.param_groups[0]["betas"][0] == 1.0  # OneCycleLR starts at max_momentum
    before = bits(ps)
    with pytest.raises(FibergenError, match="beta1"):
        trust_step(opt, ps, 0)
    assert opt.steps == 0 and (bits(ps) == before).all()


def test_keys_after_load_in_the_order_of_open(generated):
    def make():
        ps = params()
        opt = opened(generated, "dp_adamw", [{"params": ps[:2]}, {"params": ps[2:], "weight_decay": 0.0}],
                     betas=(0.8, 0.9))
        return ps, opt, torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=5)
    ps, opt, sched = make()
    for t in range(2):
        trust_step(opt, ps, t)
        sched.step()
    sd = opt.state_dict()
    _, fresh, _ = make()
    opened_keys = [list(pg) for pg in fresh.param_groups]
    fresh.load_state_dict(sd)
    assert [list(pg) for pg in fresh.param_groups] == opened_keys
    assert [pg["betas"] for pg in fresh.param_groups] == [pg["betas"] for pg in opt.param_groups]


@pytest.mark.parametrize("name", ["dp_adamw", "fiber"])
def test_privatize_rows_reused_across_batch_sizes(generated, name):
    """Poisson batches of 5, 2, 7, 0, 3 examples: privatize's rows (the
    matrix it reuses) give the run the float64 gradients give, which take
    the path that copies them anew at every step."""
    def run(dtype: torch.dtype) -> np.ndarray:
        ps = params()
        opt = opened(generated, name, ps)
        g = torch.Generator().manual_seed(7)
        for k in (5, 2, 7, 0, 3):
            cur = [torch.randn(k, *p.shape, generator=g).to(dtype) for p in ps]
            look = [torch.randn(k, *p.shape, generator=g).to(dtype) for p in ps] if name == "fiber" else None
            opt.privatize(cur, look)
            opt.step()
        return bits(ps)
    assert (run(torch.float32) == run(torch.float64)).all()


def test_load_refuses_bad_given_hypers(generated):
    ps = params()
    opt = opened(generated, "fiber_cosine", ps, lr=0.02)
    trust_step(opt, ps, 0)
    sd = opt.state_dict()
    assert sd["fibergen"]["given"] == [["lr"]]
    for given in ([["lr", "momentum"]], [["lr"], ["lr"]], "lr"):
        fresh = ft.Optimizer(params(), generated / "fiber_cosine")
        with pytest.raises(FibergenError, match="given hypers"):
            fresh.load_state_dict({**sd, "fibergen": {**sd["fibergen"], "given": given}})
        assert fresh.steps == 0


def test_load_keeps_lr_min_derived(generated):
    """A resumed fiber_cosine run derives lr_min from a scheduler's lr as the
    run that saved it did, also from a state_dict without the given names
    (saved before they were recorded): the runtime's checkpoint knows which
    hypers were set, and the param groups show what it derived."""
    ps = params()
    opt = opened(generated, "fiber_cosine", ps, lr=0.02)
    trust_step(opt, ps, 0)
    sd = opt.state_dict()
    for given in (sd["fibergen"]["given"], None):
        resumed = params()
        fresh = ft.Optimizer(resumed, generated / "fiber_cosine", allow_resume_again=True)  # one state, twice
        meta = {k: v for k, v in sd["fibergen"].items() if k != "given" or given is not None}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "resumed before", the second time
            fresh.load_state_dict({**sd, "fibergen": meta})
        fresh.param_groups[0]["lr"] = 0.01
        trust_step(fresh, resumed, 1)
        assert runtime_hypers(fresh)["lr_min"] == 0.01 / 100 and fresh.param_groups[0]["lr_min"] == 0.01 / 100
        trust_step(fresh, resumed, 2)  # and it stays derived: the param group's shown value is not sent back
        assert runtime_hypers(fresh)["lr_min"] == 0.01 / 100
