"""fibergen.torch.Optimizer as a trainer uses it: param groups, checkpoints,
the non-finite guard, hyper checks, DP settings and budgets, the look-ahead
point, and a small CNN trained with per-example clipping."""

from __future__ import annotations

import copy
import io
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import fibergen.privacy
import fibergen.torch as ft
from fibergen import FibergenError, NonFiniteExample


def model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 10))


def grads_for(params: list[torch.Tensor], step: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1000 + step)
    return [0.1 * torch.randn(p.shape, generator=g) for p in params]


def run(opt: ft.Optimizer, params: list[torch.Tensor], steps: range) -> None:
    """Steps on made-up clipped means, which the trainer vouches for."""
    for t in steps:
        for p, g in zip(params, grads_for(params, t)):
            p.grad.copy_(g)
        opt.trust_clipped_grad()
        opt.step()


def bits(params: list[torch.Tensor]) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1) for p in params]).numpy().view(np.uint32).copy()


def opened(generated, name: str = "fiber", seed: int = 7, m: torch.nn.Module | None = None, **kw):
    m = m or model()
    opt = ft.Optimizer(m.parameters(), generated / name, seed=seed, **kw)
    opt.set_dp(clip=1.0, noise_multiplier=1.1, expected_batch_size=32)
    return m, opt


def test_groups_split_nothing(generated):
    """Two groups with the same hypers step exactly as one: each group is
    its range of one flat coordinate space, noise included."""
    m1, one = opened(generated)
    run(one, list(m1.parameters()), range(10))
    m2 = model()
    ps = list(m2.parameters())
    two = ft.Optimizer([{"params": ps[:1]}, {"params": ps[1:]}], generated / "fiber", seed=7)
    two.set_dp(clip=1.0, noise_multiplier=1.1, expected_batch_size=32)
    run(two, ps, range(10))
    assert (bits(ps) == bits(list(m1.parameters()))).all()


def test_groups_with_decay_match_decay_everywhere(generated):
    """Group 2's coordinates step as under an optimizer with its hypers on
    all coordinates: same global noise offsets."""
    m1 = model()
    ps1 = list(m1.parameters())
    opt1 = ft.Optimizer([{"params": ps1[:2]}, {"params": ps1[2:], "wd": 0.1}], generated / "fiber", seed=3)
    m2 = model()
    ps2 = list(m2.parameters())
    opt2 = ft.Optimizer(ps2, generated / "fiber", seed=3, wd=0.1)
    for o in (opt1, opt2):
        o.set_noise(1e-4)
    run(opt1, ps1, range(8))
    run(opt2, ps2, range(8))
    for a, b in zip(ps1[2:], ps2[2:]):
        assert torch.equal(a, b)
    for a, b in zip(ps1[:2], ps2[:2]):
        assert not torch.equal(a, b)  # wd = 0 there
    assert opt1.param_groups[1]["wd"] == 0.1 and opt1.param_groups[0]["wd"] == 0.0


@pytest.mark.parametrize("name", ["fiber", "lamb"])  # lamb: per-parameter norms (test_reductions.py)
def test_state_dict_resume_is_bit_identical(generated, name):
    m, opt = opened(generated, name)
    params = list(m.parameters())
    run(opt, params, range(30))
    want = bits(params)

    m1, opt1 = opened(generated, name)
    run(opt1, list(m1.parameters()), range(12))
    buf = io.BytesIO()
    torch.save({"model": m1.state_dict(), "opt": opt1.state_dict()}, buf)
    buf.seek(0)
    saved = torch.load(buf)

    m2 = model(seed=5)  # other initial weights: the model's state_dict restores them
    m2.load_state_dict(saved["model"])
    opt2 = ft.Optimizer(m2.parameters(), generated / name)  # another seed: the checkpoint's wins
    opt2.load_state_dict(saved["opt"])
    assert opt2.steps == 12
    run(opt2, list(m2.parameters()), range(12, 30))
    assert (bits(list(m2.parameters())) == want).all()


def test_load_state_dict_refuses_and_changes_nothing(generated):
    m, opt = opened(generated)
    run(opt, list(m.parameters()), range(3))
    sd = opt.state_dict()

    def fresh():
        return opened(generated, seed=11)

    def damaged_blob(d):
        d["state"][0]["checkpoint"][100] ^= 1

    def truncated_blob(d):
        d["state"][0]["checkpoint"] = d["state"][0]["checkpoint"][:-3]

    def nan_state(d):
        d["state"][0]["v"][3] = float("nan")

    def other_slice(d):
        d["state"][0]["slice"] = [0, 5]

    def short_state(d):
        d["state"][0]["m"] = d["state"][0]["m"][:-1]

    def other_opt(d):
        d["fibergen"]["optimizer"] = "disk"

    def other_layout(d):
        d["fibergen"]["shapes"][0][0][0] += 1

    def not_ours(d):
        d.pop("fibergen")

    for name, edit in [("damaged", damaged_blob), ("truncated", truncated_blob), ("short state", short_state),
                       ("NaN state", nan_state), ("other slice", other_slice), ("other optimizer", other_opt),
                       ("other layout", other_layout), ("not fibergen", not_ours)]:
        bad = copy.deepcopy(sd)
        edit(bad)
        m2, opt2 = fresh()
        before = bits(list(m2.parameters()))
        states = [s.clone() for s in opt2._groups[0].states]
        with pytest.raises(FibergenError):
            opt2.load_state_dict(bad)
        assert opt2.steps == 0, name
        assert (bits(list(m2.parameters())) == before).all(), name
        assert all(torch.equal(a, b) for a, b in zip(states, opt2._groups[0].states)), name

    # Into an optimizer that has stepped: refused, since it would replay noise.
    with pytest.raises(FibergenError, match="stepped"):
        opt.load_state_dict(sd)
    # A build of another optimizer's checkpoint blob (same layout) is refused too.
    other = ft.Optimizer(model().parameters(), generated / "fiber_nocorr", seed=1)
    with pytest.raises(FibergenError):
        other.load_state_dict(sd)


def test_nonfinite_gradient_skips_the_step(generated):
    m, opt = opened(generated)
    params = list(m.parameters())
    run(opt, params, range(2))
    before = bits(params)
    states = [s.clone() for s in opt._groups[0].states]
    for p, g in zip(params, grads_for(params, 2)):
        p.grad.copy_(g)
    params[2].grad.view(-1)[5] = float("inf")
    opt.trust_clipped_grad()
    with pytest.warns(RuntimeWarning, match="skipped"):
        opt.step()
    assert opt.found_inf and opt.skipped_steps == 1 and opt.steps == 2
    nf = opt.last_nonfinite
    assert nf.index == params[0].numel() + params[1].numel() + 5 and nf.value == float("inf")
    assert (nf.param, nf.param_index) == (2, 5) and "parameter 2" in str(nf)
    assert (bits(params) == before).all()
    assert all(torch.equal(a, b) for a, b in zip(states, opt._groups[0].states))
    run(opt, params, range(2, 5))  # the noise position did not move
    assert not opt.found_inf

    m2, ref = opened(generated)
    run(ref, list(m2.parameters()), range(5))
    assert (bits(params) == bits(list(m2.parameters()))).all()


def test_nonfinite_in_one_group_skips_all(generated):
    m = model()
    ps = list(m.parameters())
    opt = ft.Optimizer([{"params": ps[:2]}, {"params": ps[2:]}], generated / "fiber", seed=1)
    opt.set_noise(1e-4)
    before = bits(ps)
    for p, g in zip(ps, grads_for(ps, 0)):
        p.grad.copy_(g)
    ps[3].grad.view(-1)[0] = float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt.step()
    assert opt.found_inf and (bits(ps) == before).all() and opt.steps == 0


def test_hypers_checked_as_in_go(generated):
    m = model()
    with pytest.raises(FibergenError, match="omega"):
        ft.Optimizer(m.parameters(), generated / "fiber", omega=1.5)
    with pytest.raises(ValueError, match="no hyper"):
        ft.Optimizer(model().parameters(), generated / "fiber", momentum=0.9)
    m, opt = opened(generated)
    opt.param_groups[0]["beta1"] = 1.0  # out of [0, 1): refused at the step, nothing changes
    with pytest.raises(FibergenError, match="beta1"):
        opt.step()
    assert opt.steps == 0
    opt.param_groups[0]["beta1"] = 0.9
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    run(opt, list(m.parameters()), range(1))
    sched.step()
    run(opt, list(m.parameters()), range(1, 2))
    assert opt._groups[0].handle.info()["hypers"][0] == {"name": "lr", "value": 0.0005}


def test_derived_default_follows_keywords(generated):
    """fiber_cosine's lr_min = lr / 100 follows lr unless given itself."""
    opt = ft.Optimizer(model().parameters(), generated / "fiber_cosine", lr=0.01)
    assert opt.defaults["lr_min"] == 0.01 / 100 and opt.param_groups[0]["lr_min"] == 0.01 / 100
    opt = ft.Optimizer(model().parameters(), generated / "fiber_cosine", lr=0.01, lr_min=0.002)
    assert opt.param_groups[0]["lr_min"] == 0.002


def test_noise_needs_dp_settings(generated):
    m = model()
    opt = ft.Optimizer(m.parameters(), generated / "fiber")
    with pytest.raises(FibergenError, match="DP settings"):
        opt.step()


def test_seed_is_secret_and_shared(generated):
    a = ft.Optimizer(model().parameters(), generated / "fiber")
    b = ft.Optimizer(model().parameters(), generated / "fiber")
    sa = [g.handle.seed() for g in a._groups]
    assert sa[0] != b._groups[0].handle.seed()
    m = model()
    ps = list(m.parameters())
    c = ft.Optimizer([{"params": ps[:1]}, {"params": ps[1:]}], generated / "fiber")
    assert len({g.handle.seed() for g in c._groups}) == 1


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_budget_from_the_accountant(generated, accountant):
    m, opt = opened(generated)
    sigma = opt.set_budget(2.0, clip=1.0, dataset_size=1000, batch_size=500, epochs=1, accountant=accountant)
    want = fibergen.privacy.sigma(2.0, dataset_size=1000, batch_size=500, epochs=1, accountant=accountant)
    assert sigma == want.sigma and want.steps == 2 and want.accountant == accountant
    run(opt, list(m.parameters()), range(2))
    eps, delta = opt.spent()
    assert eps == pytest.approx(want.epsilon, rel=1e-12) and delta == want.delta
    with pytest.raises(FibergenError, match="budget"):
        run(opt, list(m.parameters()), range(2, 3))
    assert opt.steps == 2


def test_pld_asks_for_less_noise():
    kw = dict(dataset_size=60000, batch_size=256, epochs=10)
    pld, rdp = fibergen.privacy.sigma(3.0, **kw), fibergen.privacy.sigma(3.0, accountant="rdp", **kw)
    assert pld.accountant == "pld" and pld.order == 0 and rdp.order > 1
    assert pld.sigma < rdp.sigma and pld.epsilon <= 3 and rdp.epsilon <= 3
    with pytest.raises(FibergenError, match="accountant"):
        fibergen.privacy.sigma(3.0, accountant="prv", **kw)
    for acc in ("pld", "rdp"):  # δ for an ε: the converse of epsilon
        g = fibergen.privacy.epsilon(1.0, accountant=acc, **kw)
        d = fibergen.privacy.delta(1.0, g.epsilon, accountant=acc, **kw)
        assert d.delta == pytest.approx(g.delta, rel=1e-3) and d.epsilon == g.epsilon


def test_privacy_matches_the_command_line(fibergen_bin):
    import json
    import subprocess
    out = subprocess.run([str(fibergen_bin), "privacy", "epsilon", "--sigma", "1.1", "--dataset-size", "60000",
                          "--batch-size", "256", "--epochs", "10", "--json"], check=True, capture_output=True)
    cli = json.loads(out.stdout)
    py = fibergen.privacy.epsilon(1.1, dataset_size=60000, batch_size=256, epochs=10)
    assert (py.epsilon, py.delta, py.steps, py.accountant) == (cli["epsilon"], cli["delta"], cli["steps"], cli["accountant"])
    with pytest.raises(FibergenError):
        fibergen.privacy.epsilon(1.1, dataset_size=10, batch_size=20, epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        fibergen.privacy.epsilon(1.1, dataset_size=10, batch_size=2, epochs=float("nan"))


def test_lookahead_point(generated):
    m, opt = opened(generated)
    params = list(m.parameters())
    before = bits(params)
    with opt.lookahead():
        assert (bits(params) == before).all()  # θ_0 before the first step
    run(opt, params, range(3))
    theta = torch.cat([p.detach().reshape(-1) for p in params]).clone()
    prev_m, prev = opened(generated)
    run(prev, list(prev_m.parameters()), range(2))
    theta_prev = torch.cat([p.detach().reshape(-1) for p in prev_m.parameters()])
    gamma = opt.observation()["lookahead"]
    with opt.lookahead():
        look = torch.cat([p.detach().reshape(-1) for p in params])
        want = theta + float(np.float32(gamma)) * (theta - theta_prev)
        assert torch.allclose(look, want, rtol=0, atol=1e-6)
    assert torch.equal(torch.cat([p.detach().reshape(-1) for p in params]), theta)
    _, plain = opened(generated, "dp_adamw")
    with pytest.raises(FibergenError, match="two_point"):
        with plain.lookahead():
            pass


def test_privatize_checks(generated):
    m, opt = opened(generated)
    params = list(m.parameters())
    rows = [torch.zeros(3, *p.shape) for p in params]
    rows[1][2, 0] = float("nan")
    with pytest.raises(NonFiniteExample) as e:
        opt.privatize(rows, [torch.zeros(3, *p.shape) for p in params])
    assert e.value.example == 2
    with pytest.raises(ValueError, match="shape"):
        opt.privatize([torch.zeros(3, *p.shape) for p in params[:-1]] + [torch.zeros(2, 1)], None)
    _, plain = opened(generated, "dp_adamw")
    with pytest.raises(FibergenError, match="two-point"):
        plain.privatize([torch.zeros(3, *p.shape) for p in plain._params()],
                        [torch.zeros(3, *p.shape) for p in plain._params()])


def test_privatize_reads_opacus_grad_sample(generated):
    m, opt = opened(generated, "dp_adamw")
    params = list(m.parameters())
    g = torch.Generator().manual_seed(4)
    rows = [torch.randn(5, *p.shape, generator=g) for p in params]
    opt.privatize(rows)
    want = torch.cat([p.grad.reshape(-1) for p in params]).clone()
    opt.zero_grad()
    for p, r in zip(params, rows):
        p.grad_sample = r
    opt.privatize()
    assert torch.equal(torch.cat([p.grad.reshape(-1) for p in params]), want)
    opt.zero_grad()
    opt.privatize({p: r for p, r in zip(params, rows)})
    assert torch.equal(torch.cat([p.grad.reshape(-1) for p in params]), want)


def test_ghost_clipping_scales(generated):
    m, opt = opened(generated)
    params = list(m.parameters())
    g = torch.Generator().manual_seed(3)
    cur = [torch.randn(4, *p.shape, generator=g) for p in params]
    look = [torch.randn(4, *p.shape, generator=g) for p in params]
    flat = lambda rs: torch.cat([r.reshape(4, -1) for r in rs], 1).double()  # noqa: E731
    c, lk = flat(cur), flat(look)
    scales, clipped = opt.privatize(cur, look)
    g1 = torch.cat([p.grad.reshape(-1) for p in params]).clone()
    ghost = opt.clip_scales(c.norm(dim=1), lk.norm(dim=1), (c * lk).sum(1))
    assert clipped == 4 and torch.allclose(ghost, scales, rtol=1e-6, atol=0)
    opt.privatize(cur, look, scales=ghost)  # clip_scales' last, once
    assert torch.allclose(torch.cat([p.grad.reshape(-1) for p in params]), g1, rtol=1e-5, atol=1e-7)
    for made_up in (ghost, scales, torch.ones(4)):  # taken already; a privatize's own; never computed
        with pytest.raises(ft.FibergenError, match=r"not those clip_scales\(\) returned last"):
            opt.privatize(cur, look, scales=made_up)


def test_cnn_trains_with_per_example_clipping(generated):
    """50 steps of fiber with per-example clipping and its two-point
    observation on a linearly separable toy task: the loss falls."""
    torch.manual_seed(0)
    n_data, batch = 512, 64
    x = torch.randn(n_data, 1, 8, 8)
    w = torch.randn(64, 10)
    y = (x.reshape(n_data, -1) @ w).argmax(1)
    m = model()
    opt = ft.Optimizer(m.parameters(), generated / "fiber", seed=1, lr=3e-3)
    # (at σ = 0.5 with the default eps_v = 1e-8 this toy run sits on the floor
    # of vbar in its first 50 steps and diverges: docs/python.md.)
    opt.set_dp(clip=1.0, noise_multiplier=0.2, expected_batch_size=batch)
    loss0 = F.cross_entropy(m(x), y).item()
    for t in range(50):
        idx = torch.randint(0, n_data, (batch,), generator=torch.Generator().manual_seed(t))
        with opt.lookahead():
            look = ft.per_example_grads(m, F.cross_entropy, x[idx], y[idx])
        cur = ft.per_example_grads(m, F.cross_entropy, x[idx], y[idx])
        opt.privatize(cur, look)
        opt.step()
    loss = F.cross_entropy(m(x), y).item()
    assert loss < 0.8 * loss0, (loss0, loss)


def test_bad_inputs(generated, tmp_path):
    with pytest.raises(FibergenError, match="no directory"):
        ft.Optimizer(model().parameters(), tmp_path / "fiber")
    (tmp_path / "fiber").mkdir()
    with pytest.raises(FibergenError, match="fiber.json"):
        ft.Optimizer(model().parameters(), tmp_path / "fiber")
    m = model().double()
    with pytest.raises(FibergenError, match="float32"):
        ft.Optimizer(m.parameters(), generated / "fiber")
    _, opt = opened(generated)
    with pytest.raises(FibergenError, match="constructing"):
        opt.add_param_group({"params": [torch.nn.Parameter(torch.zeros(3))]})


def test_moved_storage_is_followed_and_replaced_params_refused(generated):
    m1, o1 = opened(generated)
    run(o1, list(m1.parameters()), range(2))
    m1.share_memory()  # moves the flat buffer's storage: the runtime must follow it
    run(o1, list(m1.parameters()), range(2, 4))
    m2, o2 = opened(generated)
    run(o2, list(m2.parameters()), range(4))
    assert (bits(list(m1.parameters())) == bits(list(m2.parameters()))).all()
    p = next(m1.parameters())
    p.data = p.data.clone()
    with pytest.raises(FibergenError, match="no longer a view"):
        o1.step()


def test_argument_checks(generated):
    m, opt = opened(generated)
    params = list(m.parameters())
    rows = [torch.zeros(4, *p.shape) for p in params]
    with pytest.raises(ValueError, match="scales"):
        opt.privatize(rows, rows, scales=torch.ones(2))
    with pytest.raises(ValueError, match="look_norms"):
        opt.clip_scales(torch.ones(4), torch.ones(2), torch.ones(2))
    with pytest.raises(FibergenError, match="privatize failed"):
        opt.step()  # the gradient holds no new sum: stepping it again would release it twice
    opt.zero_grad()
    with pytest.raises(FibergenError, match="two points"):
        opt.clip_scales(torch.ones(4))  # fiber clips the mix: the look norms are needed
    with pytest.raises(ValueError, match="seed"):
        ft.Optimizer(model().parameters(), generated / "fiber", seed=-1)
    with pytest.raises(ValueError, match="threads"):
        ft.Optimizer(model().parameters(), generated / "fiber", threads=-3)
    opt.param_groups[0]["lr"] = float("nan")
    with pytest.raises(ValueError, match="lr"):
        opt.step()
    opt.param_groups[0]["lr"] = 1e-3
    with pytest.raises(TypeError, match="state_dict"):
        copy.deepcopy(opt)


def test_budget_holds_and_resumes(generated):
    m1 = model()
    o1 = ft.Optimizer(m1.parameters(), generated / "fiber", seed=2)
    o1.set_budget(3.0, clip=1.0, dataset_size=1000, batch_size=100, epochs=1)
    with pytest.raises(FibergenError, match="budget"):
        o1.set_dp(clip=1.0, noise_multiplier=0.01, expected_batch_size=100)
    run(o1, list(m1.parameters()), range(4))
    with pytest.raises(FibergenError, match="before the first step"):
        o1.set_budget(3.0, clip=1.0, dataset_size=1000, batch_size=100, epochs=1)
    sd = o1.state_dict()
    m2 = model()
    m2.load_state_dict(m1.state_dict())
    o2 = ft.Optimizer(m2.parameters(), generated / "fiber")
    o2.load_state_dict(sd)
    assert o2.spent() == o1.spent()
    run(o1, list(m1.parameters()), range(4, 10))
    run(o2, list(m2.parameters()), range(4, 10))
    assert o2.spent() == o1.spent() and (bits(list(m1.parameters())) == bits(list(m2.parameters()))).all()
    with pytest.raises(FibergenError, match="budget"):
        run(o2, list(m2.parameters()), range(10, 11))


def test_group_order_does_not_mix_gradients(generated):
    """per_example_grads returns a dict by parameter, so groups that list the
    parameters in another order than the model get each its own gradient."""
    torch.manual_seed(0)
    x, y = torch.randn(6, 1, 8, 8), torch.randint(0, 10, (6,))
    m = model()
    ps = list(m.parameters())
    opt = ft.Optimizer([{"params": ps[2:]}, {"params": ps[:2]}], generated / "dp_adamw", seed=1)
    with pytest.warns(RuntimeWarning, match="no DP noise"):
        opt.set_dp(clip=1e6, noise_multiplier=0.0, expected_batch_size=6)  # no clipping: the mean gradient
    opt.privatize(ft.per_example_grads(m, F.cross_entropy, x, y))
    got = [p.grad.clone() for p in ps]
    m.zero_grad()
    ref = model()
    F.cross_entropy(ref(x), y).backward()
    for g, r in zip(got, ref.parameters()):
        assert torch.allclose(g, r.grad, rtol=1e-4, atol=1e-6)


def test_scheduler_resume_is_bit_identical(generated):
    def fresh():
        m, o = opened(generated)
        return m, o, torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5)

    m, o, sched = fresh()
    for t in range(5):
        run(o, list(m.parameters()), range(t, t + 1))
        sched.step()
    want = bits(list(m.parameters()))
    m1, o1, s1 = fresh()
    for t in range(2):
        run(o1, list(m1.parameters()), range(t, t + 1))
        s1.step()
    sd, ssd, msd = o1.state_dict(), s1.state_dict(), m1.state_dict()
    m2, o2, s2 = fresh()
    m2.load_state_dict(msd)
    o2.load_state_dict(sd)
    s2.load_state_dict(ssd)
    for t in range(2, 5):
        run(o2, list(m2.parameters()), range(t, t + 1))
        s2.step()
    assert (bits(list(m2.parameters())) == want).all()


def test_hypers_apply_before_the_gradients_are_taken(generated):
    m, opt = opened(generated)
    opt.param_groups[0]["gamma"] = 0.9
    assert opt.observation()["lookahead"] == 0.9
    run(opt, list(m.parameters()), range(1))
    with opt.lookahead():
        with pytest.raises(FibergenError, match="lookahead"):
            opt.step()
    assert opt.steps == 1


def test_fork_is_refused(generated):
    import os
    m, opt = opened(generated)
    pid = os.fork()
    if pid == 0:  # the child: the Go runtime is not there
        try:
            opt.step()
        except FibergenError as e:
            os._exit(0 if "fork" in str(e) else 2)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_diagnostics_and_attenuations(generated):
    m, opt = opened(generated, omega=0.5)
    params = list(m.parameters())
    assert opt.sigma_w2 == (1.1 * 1.0 / 32) ** 2
    with pytest.raises(FibergenError, match="diagnostics are off"):
        opt.clamp_mass()
    opt.enable_diagnostics()
    att = opt.attenuations()
    assert list(att) == ["gt"] and att["gt"]["finite"] == 0
    assert att["gt"]["steady"] == pytest.approx((2 - 0.5) / (4 - 3 * 0.5), rel=1e-12)  # docs/optimizers.md
    run(opt, params, range(2))
    assert opt.attenuations()["gt"]["finite"] == pytest.approx(0.5 ** 2 + (2 * 0.5 * (1 - 0.5)) ** 2, rel=1e-12)  # h_0 = ω, h_1 = 2ω(1−ω)
    cm = opt.clamp_mass()
    assert len(cm) == 1 and 0 <= cm[0] <= 1
    for group in opt.param_groups:
        group["eps_v"] = 1e6  # every corrected second moment on its floor
    run(opt, params, range(2, 3))
    assert opt.clamp_mass() == [1.0]
    _, plain = opened(generated, "dp_adam")
    assert plain.attenuations() == {}
    with pytest.raises(FibergenError, match="clamp_mass"):
        plain.enable_diagnostics()


def test_a_state_is_resumed_once(generated):
    """Two runs resumed from one state would draw the same noise on other
    gradients: the second load_state_dict of the same state is refused,
    unless allow_resume_again, which warns."""
    m, opt = opened(generated)
    run(opt, list(m.parameters()), range(3))
    sd = opt.state_dict()
    first = ft.Optimizer(model().parameters(), generated / "fiber")
    first.load_state_dict(sd)
    second = ft.Optimizer(model().parameters(), generated / "fiber")
    with pytest.raises(FibergenError, match="was resumed before"):
        second.load_state_dict(copy.deepcopy(sd))
    assert second.steps == 0
    again = ft.Optimizer(model().parameters(), generated / "fiber", allow_resume_again=True)
    with pytest.warns(RuntimeWarning, match="resumed before"):
        again.load_state_dict(sd)
    assert again.steps == 3


STARTS = (Path(__file__).resolve().parents[2] / "tests" / "testdata" / "dsl" / "starts.dsl").read_text()


def test_state_by_name(tmp_path):
    """opt.state[p] holds each state by name, shaped like p and updated in
    place by the steps: here an EMA of the weights that starts at theta_0
    and a momentum that starts at g_0, as the step in float32 computes them."""
    (tmp_path / "starts.dsl").write_text(STARTS)
    m = torch.nn.Linear(3, 2)
    params = list(m.parameters())
    with pytest.warns(UserWarning, match="state avg is updated but nothing else reads it"):
        opt = ft.Optimizer(params, tmp_path / "starts.dsl", seed=1)
    with pytest.warns(RuntimeWarning, match="no DP noise"):
        opt.set_noise(0.0)
    assert [sorted(opt.state[p]) for p in params] == [["avg", "m"]] * 2
    assert all(opt.state[p]["avg"].shape == p.shape for p in params)
    theta = [p.detach().clone() for p in params]
    mom, avg = None, [t.clone() for t in theta]
    for t in range(3):
        gs = grads_for(params, t)
        mom = [g.clone() for g in gs] if mom is None else mom
        for i, g in enumerate(gs):
            mom[i] = torch.tensor(0.75) * mom[i] + torch.tensor(0.25) * g
            theta[i] = theta[i] - torch.tensor(0.1) * mom[i]
            avg[i] = torch.tensor(0.5) * avg[i] + torch.tensor(0.5) * theta[i]
        run(opt, params, range(t, t + 1))
    for i, p in enumerate(params):
        assert torch.equal(p.detach(), theta[i])
        assert torch.equal(opt.state[p]["m"], mom[i])
        assert torch.equal(opt.state[p]["avg"], avg[i])
    flat = opt.state_dict()["state"][0]["avg"]
    assert torch.equal(flat[:params[0].numel()], opt.state[params[0]]["avg"].reshape(-1))


BLT = (Path(__file__).resolve().parents[2] / "tests" / "testdata" / "dsl" / "blt.dsl").read_text()


def test_noise_buffers_stay_hidden(tmp_path):
    """A noise block's buffers hold past noise: opt.state shows the
    optimizer's states but not them, at_state refuses them, and only the
    checkpoint (state_dict, as private as the data) carries them."""
    (tmp_path / "blt.dsl").write_text(BLT)
    params = list(torch.nn.Linear(3, 2).parameters())
    opt = ft.Optimizer(params, tmp_path / "blt.dsl", seed=1)
    opt.set_noise(1e-2)
    run(opt, params, range(2))
    assert [sorted(opt.state[p]) for p in params] == [["m"]] * 2
    with pytest.raises(ValueError, match="s1 is a noise buffer of blt_probe"):
        with opt.at_state("s1"):
            pass
    assert {"m", "s1", "s2"} <= set(opt.state_dict()["state"][0])


def test_at_state_evaluates_at_the_average(generated):
    """at_state("x") puts Schedule-Free's average into the parameters, with
    theta back bit for bit after; before the first step x is theta itself,
    step is refused inside, and an unknown state is a ValueError."""
    m = model()
    params = list(m.parameters())
    opt = ft.Optimizer(params, generated / "schedule_free", seed=3)
    opt.set_noise(1e-4)
    with opt.at_state("x"):
        assert bits(params).tobytes() == bits(list(model().parameters())).tobytes()
    run(opt, params, range(3))
    before = bits(params)
    with opt.at_state("x"):
        at_x = bits(params)
        with pytest.raises(FibergenError, match=r"step inside 'with opt.at_state\('x'\)': the parameters there are state x"):
            opt.step()
    assert np.array_equal(at_x, torch.cat([opt.state[p]["x"].reshape(-1) for p in params]).numpy().view(np.uint32))
    assert not np.array_equal(at_x, before) and np.array_equal(bits(params), before)
    with pytest.raises(ValueError, match="has no state 'avg'"):
        with opt.at_state("avg"):
            pass


def test_at_state_refuses_a_start_from_g_before_the_first_step(tmp_path):
    (tmp_path / "starts.dsl").write_text(STARTS)
    p = torch.nn.Parameter(torch.ones(3))
    with pytest.warns(UserWarning):
        opt = ft.Optimizer([p], tmp_path / "starts.dsl", seed=1)
    with pytest.raises(FibergenError, match=r"state m starts from `g` at the first step; before it the binding gives only"):
        with opt.at_state("m"):
            pass
    with opt.at_state("avg"):
        assert torch.equal(p.detach(), torch.ones(3))
