"""The ranks of test_distributed: each runs one scenario on the gloo
backend and writes what it measured for the test to compare."""

from __future__ import annotations

import hashlib
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

import fibergen.torch as ft


def step_both(opt, ref, ps: list, rps: list, steps: int) -> None:
    """Steps opt (sharded) and ref (whole) on the same made-up clipped means, vouched for."""
    for t in range(steps):
        g = torch.Generator().manual_seed(t)
        for p, q in zip(ps, rps):
            x = 0.1 * torch.randn(p.shape, generator=g)
            p.grad.copy_(x)
            q.grad.copy_(x)
        for o in (opt, ref):
            o.trust_clipped_grad()
            o.step()


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(3 * 6 * 6, 10))  # 1120 coordinates


def flat(params) -> np.ndarray:
    return torch.cat([p.detach().float().reshape(-1) for p in params]).numpy().copy()


def sharded_step(rank: int, out: Path, gen: Path, name: str) -> None:
    """Steps the same clipped means sharded over the ranks and, on every
    rank, unsharded: the parameters and the states agree bit for bit."""
    m, ref_m = model(), model()
    ps = list(m.parameters())
    groups = [{"params": ps[:2]}, {"params": ps[2:], "wd": 0.05}]
    opt = ft.Optimizer(groups, gen / name, seed=99, process_group=dist.group.WORLD)
    rps = list(ref_m.parameters())
    ref = ft.Optimizer([{"params": rps[:2]}, {"params": rps[2:], "wd": 0.05}], gen / name, seed=99)
    for o in (opt, ref):
        o.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=16)
    step_both(opt, ref, ps, rps, 20)
    same_params = bool((flat(ps).view(np.uint32) == flat(rps).view(np.uint32)).all())
    same_states = all(torch.equal(s, rg.states[k][g.lo - rg.lo:g.hi - rg.lo])
                      for g, rg in zip(opt._groups, ref._groups) for k, s in enumerate(g.states))
    same_states &= all(torch.equal(opt.state[p][s["name"]], ref.state[q][s["name"]])  # states per row or column
                       for p, q in zip(ps, rps) if p in opt.state for s in opt._info["line_states"])
    own = sum(g.n for g in opt._groups)
    np.save(out / f"sharded-{rank}.npy", np.array([same_params, same_states, own, opt.steps], dtype=np.int64))


def training(rank: int, out: Path, gen: Path, name: str) -> None:
    """Data-parallel DP training: each rank clips its half of every batch,
    the clipped sums are all-reduced, the states are sharded. A NaN in one
    rank's gradient skips the step on both. The secret seed is shared."""
    torch.manual_seed(1)
    x = torch.randn(256, 1, 8, 8)
    y = torch.randint(0, 10, (256,))
    m = model()
    secret = ft.Optimizer(model().parameters(), gen / name, process_group=dist.group.WORLD)
    seed = secret._groups[0].handle.seed()
    seeds = [torch.zeros(1, dtype=torch.int64) for _ in range(2)]
    dist.all_gather(seeds, torch.tensor([seed - (1 << 64) if seed >= 1 << 63 else seed], dtype=torch.int64))
    # A reproducible run needs a fixed seed: the test compares two runs.
    opt = ft.Optimizer(m.parameters(), gen / name, seed=5, process_group=dist.group.WORLD, lr=3e-3)
    opt.set_dp(clip=1.0, noise_multiplier=0.3, expected_batch_size=32)
    two = opt.observation()["kind"] == "two_point"
    skipped = refused = 0
    for t in range(10):
        idx = torch.randint(0, 256, (32,), generator=torch.Generator().manual_seed(t))
        mine = idx[rank * 16:(rank + 1) * 16]
        look = None
        if two:
            with opt.lookahead():
                look = ft.per_example_grads(m, F.cross_entropy, x[mine], y[mine])
        cur = ft.per_example_grads(m, F.cross_entropy, x[mine], y[mine])
        if t == 6 and rank == 0:  # one rank's example is not finite: every rank raises, none steps
            next(iter(cur.values()))[3].view(-1)[0] = float("nan")
        try:
            opt.privatize(cur, look)
        except ft.NonFiniteExample:
            refused += 1
            try:
                opt.step()
            except ft.FibergenError:
                refused += 1  # the gradient is not a privatized one until the next privatize
            continue
        if t == 4 and rank == 1:  # the trainer's own write, which it vouches for
            list(m.parameters())[-1].grad[0] = float("nan")
            opt.trust_clipped_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt.step()
        skipped += opt.found_inf
    np.save(out / f"train-{rank}.npy", flat(m.parameters()))
    np.save(out / f"meta-{rank}.npy", np.array([seeds[0].item() == seeds[1].item(), skipped, refused, opt.steps]))


def sharded_bf16(rank: int, out: Path, gen: Path, name: str) -> None:
    """A bfloat16 model, its parameters rounded stochastically, sharded over
    the ranks and unsharded: the rounding bits are the global index's, so
    the parameters agree bit for bit (the kernels compiled by name)."""
    m, ref_m = model().bfloat16(), model().bfloat16()
    ps, rps = list(m.parameters()), list(ref_m.parameters())
    opt = ft.Optimizer(ps, name, seed=7, process_group=dist.group.WORLD, param_rounding="stochastic")
    ref = ft.Optimizer(rps, name, seed=7, param_rounding="stochastic")
    for o in (opt, ref):
        o.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=16)
    step_both(opt, ref, ps, rps, 5)
    same_params = bool((flat(ps).view(np.uint32) == flat(rps).view(np.uint32)).all())
    bf16 = all(p.dtype == torch.bfloat16 for p in ps)
    np.save(out / f"bf16-{rank}.npy", np.array([same_params, bf16, opt.steps], dtype=np.int64))


def secure(rank: int, out: Path, gen: Path, name: str) -> None:
    """Secure mode sharded over the ranks: every rank holds rank 0's key
    (compared by digest, never shown), and the sharded steps match, bit for
    bit, an unsharded optimizer given that key."""
    m, ref_m = model(), model()
    ps, rps = list(m.parameters()), list(ref_m.parameters())
    opt = ft.Optimizer(ps, gen / name, secure=True, process_group=dist.group.WORLD)
    key = opt._handle.share_key()
    digests: list = [None] * dist.get_world_size()
    dist.all_gather_object(digests, hashlib.sha256(repr(key).encode()).hexdigest())
    ref = ft.Optimizer(rps, gen / name, secure=True)
    ref._handle.set_key(key)
    for o in (opt, ref):
        o.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=16)
    step_both(opt, ref, ps, rps, 5)
    same_params = bool((flat(ps).view(np.uint32) == flat(rps).view(np.uint32)).all())
    np.save(out / f"secure-{rank}.npy", np.array([len(set(digests)) == 1, same_params, opt.steps], dtype=np.int64))


def clip_groups(rank: int, out: Path, gen: Path, name: str) -> None:
    """Proportional noise over two clip groups (the conv, the linear),
    sharded over the ranks and unsharded: each shard draws its groups'
    noise at the global indices, so the parameters agree bit for bit."""
    m, ref_m = model(), model()
    ps, rps = list(m.parameters()), list(ref_m.parameters())
    opt = ft.Optimizer([{"params": ps[:2]}, {"params": ps[2:]}], gen / name, seed=5, process_group=dist.group.WORLD)
    ref = ft.Optimizer([{"params": rps[:2]}, {"params": rps[2:]}], gen / name, seed=5)
    for o in (opt, ref):
        o.set_dp(clip=[0.25, 2.0], noise_multiplier=1.0, expected_batch_size=16, proportional_noise=True)
    step_both(opt, ref, ps, rps, 5)
    same_params = bool((flat(ps).view(np.uint32) == flat(rps).view(np.uint32)).all())
    np.save(out / f"clip_groups-{rank}.npy", np.array([same_params, opt.steps], dtype=np.int64))


def main() -> None:
    rank, world, rdv, scenario, out, gen, name = sys.argv[1:8]
    dist.init_process_group("gloo", init_method=f"file://{rdv}", rank=int(rank), world_size=int(world))
    try:
        {"sharded": sharded_step, "training": training, "secure": secure, "bf16": sharded_bf16,
         "clip_groups": clip_groups}[scenario](int(rank), Path(out), Path(gen), name)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
