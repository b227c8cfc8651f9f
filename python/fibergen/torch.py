"""fibergen optimizers as torch.optim.Optimizer.

``Optimizer(model.parameters(), "generated/fiber", lr=3e-3)`` opens the
optimizer that ``fibergen build`` wrote into a directory and steps the
model's parameters with its fused kernel, the DP noise drawn inside it: the
host kernel (``<name>.so``) on every core for CPU tensors, the PTX through
the CUDA driver for CUDA tensors. The host side — hyper checks, per-step
scalars, the attenuation, the noise position, privatization, checkpoints,
the privacy accountant — is fibergen's Go runtime, reached through
libfibergen.so (``fibergen._lib``); nothing here re-implements it.

Layout: the parameters of all groups live in one flat float32 buffer (the
parameters become views into it), their gradients in another, so that
privatization clips each example over all of them at once; each group is one
runtime optimizer over its range of coordinates, with its own hypers and its
global offset, so a step is one kernel launch per group and the noise of a
coordinate does not depend on how the groups or ranks split the buffers.
With a process group (``torch.distributed``) every rank keeps the states
of its slice of the flat buffers only (ZeRO-1), steps that slice and
all-gathers the parameters. docs/python.md is the guide.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import torch
import torch.distributed as dist

from . import _lib
from ._lib import FibergenError, NonFiniteExample, NonFiniteGradient

__all__ = ["Optimizer", "per_example_grads", "FibergenError", "NonFiniteGradient", "NonFiniteExample"]

_STATE_DICT_FORMAT = "fibergen-torch-1"


# How far apart, in floats, the host buffers start in their 4 KiB pages
# (runtime/buffers.go, bufferStagger, 320 bytes): buffers allocated alike
# all start at one offset, and the host step's loads then alias its stores
# (2x slower at some sizes).
_STAGGER = 80


def _buffer(k: int, n: int, dev: torch.device) -> torch.Tensor:
    """n float32 zeros for the k-th flat buffer (theta, g, the states), on
    the CPU starting k·_STAGGER floats into its storage."""
    pad = k * _STAGGER % 1024 if dev.type == "cpu" else 0
    return torch.zeros(pad + n, dtype=torch.float32, device=dev)[pad:]


class _Group:
    """One parameter group: its coordinates [start, stop) of the flat
    buffers, this rank's part [lo, hi) of them, its states and its runtime
    optimizer."""

    def __init__(self, handle: _lib.Handle, start: int, stop: int, lo: int, hi: int):
        self.handle, self.start, self.stop, self.lo, self.hi = handle, start, stop, lo, hi
        self.states: list[torch.Tensor] = []
        self.applied: dict[str, float] = {}  # the hypers the runtime holds
        self.bound: list[int] = []  # the host addresses the runtime steps (use_buffers)

    @property
    def n(self) -> int:
        return self.hi - self.lo


class Optimizer(torch.optim.Optimizer):
    """A fibergen optimizer over ``params``, from the directory ``path`` that
    ``fibergen build`` wrote (e.g. ``generated/fiber``).

    Keyword arguments set hypers for every group (each group of ``params``
    may set its own, e.g. ``{"params": biases, "wd": 0}``); the runtime
    checks each range, the filters' stability and the observation, and
    refuses a setting with a ``FibergenError``. ``seed`` fixes the noise seed
    (default: a secret one from the OS, shared by every group and rank);
    ``threads`` caps the host kernel's threads (default: every core);
    ``process_group`` shards the states over the ranks of a
    ``torch.distributed`` group (ZeRO-1); ``allow_extrapolation`` permits a
    two_point weight outside [0, 1]; ``allow_resume_again`` lets
    ``load_state_dict`` resume, with a warning, a state resumed before on
    this machine, which it otherwise refuses (two runs resumed from one state
    draw the same noise on different gradients; the record of resumes is in
    ``$FIBERGEN_STATE_DIR``, else ``~/.local/state/fibergen``); ``allow_unstable`` permits hypers at which a state
    grows without bound (a filter of spectral radius above 1);
    ``allow_gradient_reuse`` lets ``step`` run again on the gradient it
    stepped on, for benchmarks, never for DP training (it releases a batch
    twice).

    Before stepping, give the noise: ``set_dp`` (or ``set_budget``) for DP
    training, ``set_noise`` to replay a known σ_w². Each iteration then
    either calls ``privatize`` on per-example gradients, or writes the
    clipped mean gradient into the parameters' ``.grad`` and says so with
    ``trust_clipped_grad``, and calls ``step``, which adds the noise inside
    the kernel. A gradient is released once: ``step`` refuses the gradient
    it stepped on, and, under DP settings, one that ``backward()`` (or any
    write but ``privatize``) left in ``.grad`` without ``trust_clipped_grad``.
    """

    def __init__(self, params: Iterable[Any], path: str | Path, *, seed: Optional[int] = None,
                 threads: int = 0, process_group: Optional[Any] = None, allow_extrapolation: bool = False,
                 allow_resume_again: bool = False, allow_unstable: bool = False, allow_gradient_reuse: bool = False,
                 **hypers: float):
        self._path = Path(path)
        if not self._path.is_dir():
            where = "" if self._path.is_absolute() else f" (relative to {Path.cwd()})"
            raise FibergenError(f"fibergen: no directory {self._path}{where}: give one that fibergen build wrote, "
                                "e.g. generated/fiber after make build")
        if not isinstance(threads, int) or threads < 0:
            raise ValueError(f"fibergen: threads = {threads!r}: want a whole number >= 0 (0: every core)")
        # The resume record's directory as Python sees the environment now
        # (the library's Go runtime saw it once, when it was loaded).
        self._opts = {"threads": threads, "allow_extrapolation": allow_extrapolation,
                      "allow_resume_again": allow_resume_again, "allow_unstable": allow_unstable,
                      "allow_gradient_reuse": allow_gradient_reuse, "state_dir": os.environ.get("FIBERGEN_STATE_DIR", "")}
        probe = _lib.Handle(self._path, backend="go", **self._opts)
        self._info = probe.info()
        self._states = self._info["buffers"][2:]
        defaults = {h["name"]: h["value"] for h in self._info["hypers"]}
        if unknown := sorted(set(hypers) - set(defaults)):
            raise ValueError(f"fibergen: {self._info['name']} has no hyper {', '.join(unknown)} "
                             f"(its hypers: {', '.join(defaults)})")
        if hypers:  # the runtime derives the defaults written as expressions of them (docs/dsl.md)
            probe.set_hypers({k: float(v) for k, v in hypers.items()})
            defaults = {h["name"]: h["value"] for h in probe.info()["hypers"]}
        self._built = False
        super().__init__(params, defaults)
        self._pg = process_group
        self._rank, self._world = (dist.get_rank(process_group), dist.get_world_size(process_group)) \
            if process_group is not None else (0, 1)
        if seed is not None and not (isinstance(seed, int) and 0 <= seed < 1 << 64):
            raise ValueError(f"fibergen: seed = {seed!r}: want a whole number in [0, 2^64)")
        self._layout()
        self._open_groups()
        self._share_seed(seed, probe.seed())
        probe.close()
        self.found_inf = False  # the last step was skipped for a NaN or ±Inf gradient
        self.skipped_steps = 0
        self.last_nonfinite: Optional[NonFiniteGradient] = None
        self._in_lookahead = False
        self._grad_invalid = ""  # why step must not read the gradient (a privatize failed on some rank)
        self._grad_seen = self._grad._version  # the flat gradient's version when the runtime last heard of it
        self._broken = ""  # why the optimizer cannot step at all (a load_state_dict that failed half way)

    def __getstate__(self) -> Any:
        raise TypeError("fibergen: an Optimizer holds kernels and device memory and cannot be pickled or "
                        "deep-copied: save opt.state_dict() and load it into a new Optimizer")

    # --- layout -----------------------------------------------------------

    def add_param_group(self, param_group: dict) -> None:
        if self._built:
            raise FibergenError("fibergen: add every parameter group when constructing the optimizer: "
                                "its parameters live in flat buffers laid out once")
        if unknown := sorted(set(param_group) - set(self.defaults) - {"params"}):
            raise ValueError(f"fibergen: {self._info['name']} has no hyper {', '.join(unknown)}")
        super().add_param_group(param_group)

    def _params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _layout(self) -> None:
        """Moves the parameters into one flat buffer and their gradients into
        another, padded so that every rank's slice has the same length."""
        params = self._params()
        if not params:
            raise ValueError("fibergen: the optimizer got no parameters")
        dev = params[0].device
        if dev.type not in ("cpu", "cuda"):
            raise FibergenError(f"fibergen: parameters on {dev}: the kernels run on the CPU and on CUDA devices")
        for i, p in enumerate(params):
            if p.dtype != torch.float32 or p.device != dev:
                raise FibergenError(f"fibergen: parameter {i} is {p.dtype} on {p.device}: every parameter must be "
                                    f"float32 on one device ({dev}), as the kernels are")
        self.numel = sum(p.numel() for p in params)
        self._slice = -(-self.numel // self._world)
        self._slice += -self._slice % 4  # whole Philox groups of four per rank
        total = self._slice * self._world
        self._theta, self._grad = _buffer(0, total, dev), _buffer(1, total, dev)
        off = 0
        with torch.no_grad():
            for p in params:
                k = p.numel()
                self._theta[off:off + k].copy_(p.reshape(-1))
                p.data = self._theta[off:off + k].view_as(p)
                p.grad = self._grad[off:off + k].view_as(p)
                off += k
        self._device = dev
        self._built = True

    def _open_groups(self) -> None:
        self._groups: list[_Group] = []
        start = 0
        lo_r, hi_r = self._rank * self._slice, (self._rank + 1) * self._slice
        cuda = self._device.type == "cuda"
        for pg in self.param_groups:
            stop = start + sum(p.numel() for p in pg["params"])
            lo, hi = max(start, lo_r), max(min(stop, hi_r), max(start, lo_r))
            # The offset places a group's noise on the CPU; on CUDA each step
            # gives it, and the checkpoint's offset tells the groups apart.
            opts = dict(self._opts, backend="cuda", device=self._device.index or 0, offset=lo) if cuda \
                else dict(self._opts, backend="cpu", offset=lo)
            g = _Group(_lib.Handle(self._path, **opts), start, stop, lo, hi)
            self._apply_hypers(g, pg)
            g.states = [_buffer(2 + k, g.n, self._device) for k in range(len(self._states))]
            if cuda:
                g.handle.init_device_states(self._ptrs(g), g.n)
            else:
                g.bound = self._ptrs(g)
                g.handle.use_buffers(g.bound, g.n)
            self._groups.append(g)
            start = stop

    def _ptrs(self, g: _Group) -> list[int]:
        """The group's buffers, theta, g, states, as addresses."""
        bufs = [self._theta[g.lo:g.hi], self._grad[g.lo:g.hi], *g.states]
        return [b.data_ptr() if g.n else 0 for b in bufs]

    def _share_seed(self, seed: Optional[int], drawn: int) -> None:
        """Sets one seed on every group and rank: the given one, else one the
        OS drew on rank 0."""
        if seed is None:
            seed = drawn
            if self._pg is not None:
                t = torch.tensor([seed - (1 << 64) if seed >= 1 << 63 else seed], dtype=torch.int64,
                                 device=self._device)
                dist.broadcast(t, _global_rank0(self._pg), group=self._pg)
                seed = int(t.item()) & ((1 << 64) - 1)
        for g in self._groups:
            g.handle.set_seed(seed)

    # --- settings ---------------------------------------------------------

    def _apply_hypers(self, g: _Group, pg: dict) -> None:
        """Hands the group's hypers to the runtime where they changed (e.g.
        by an LR scheduler); the runtime checks them as a whole."""
        values = {k: float(pg[k]) for k in self.defaults if pg[k] != g.applied.get(k)}
        if values:
            g.handle.set_hypers(values)
            g.applied.update(values)

    def _sync(self) -> None:
        """Brings the runtime up to date with the trainer's side: the groups'
        hypers (a scheduler may have changed them), and, on the CPU, where the
        flat buffers are now (checking the parameters are still views of
        them)."""
        for g, pg in zip(self._groups, self.param_groups):
            self._apply_hypers(g, pg)
        base, off = self._theta.data_ptr(), 0
        for i, p in enumerate(self._params()):
            if p.device != self._device or p.data_ptr() != base + 4 * off:
                raise FibergenError(
                    f"fibergen: parameter {i} is no longer a view of the optimizer's flat buffer (p.data replaced, "
                    "the model moved with .to()/.cuda(), or another optimizer took it over): create the optimizer "
                    "once the model is where it trains, and do not replace p.data")
            off += p.numel()
        if self._device.type == "cpu":
            for g in self._groups:
                if (ptrs := self._ptrs(g)) != g.bound:  # the storage moved (e.g. share_memory_)
                    g.handle.use_buffers(ptrs, g.n)
                    g.bound = ptrs

    def set_dp(self, clip: float, noise_multiplier: float, expected_batch_size: int) -> None:
        """The DP settings of the next steps: per-example clipping norm C,
        noise multiplier σ_DP and (expected) batch size B; the noise per
        coordinate is σ_DP·C/B."""
        for g in self._groups:
            g.handle.set_dp(clip, noise_multiplier, expected_batch_size)

    def set_noise(self, sigma_w2: float, draw: bool = True) -> None:
        """Gives the noise variance σ_w² directly (replaying recorded clipped
        means); ``draw=False`` says the gradients are privatized already."""
        for g in self._groups:
            g.handle.set_noise(sigma_w2, draw)

    def set_budget(self, epsilon: float, *, clip: float, dataset_size: int, batch_size: int, epochs: float,
                   delta: float = 0.0, sampling: str = "poisson", accountant: str = "pld") -> float:
        """Calibrates σ_DP with fibergen's accountant ("pld", the default, or
        "rdp") so that the run spends at most (ε, δ) (δ = 1/N^1.1 by
        default), sets the DP settings and from then on refuses the steps
        past the schedule; returns σ_DP."""
        req = {"epsilon": epsilon, "delta": delta, "clip": clip, "dataset_size": dataset_size,
               "batch_size": batch_size, "epochs": epochs, "sampling": sampling, "accountant": accountant}
        for g in self._groups:
            sigma = g.handle.set_budget(req)
        return sigma

    @property
    def sigma_w2(self) -> Optional[float]:
        """The noise variance per coordinate the DP settings give, σ_w² =
        (σ_DP·sensitivity/B)²; None without DP settings (before set_dp or
        set_budget, or after set_noise)."""
        dp = self._groups[0].handle.info()["dp"]
        return None if dp is None else dp["sigma_w2"]

    def spent(self) -> Optional[tuple[float, float]]:
        """The (ε, δ) spent so far under the budget, or None without one.
        Under PLD, before the schedule's last step, the ε of the next of 100
        evenly spaced milestones: an upper bound."""
        s = self._groups[0].handle.info()["spent"]
        if s is None:
            return None
        return (math.inf if s["epsilon"] is None else s["epsilon"]), s["delta"]

    @property
    def steps(self) -> int:
        """Steps taken: the next step is step ``steps``."""
        return self._groups[0].handle.info()["steps"]

    def observation(self) -> dict:
        """The next step's observation at the groups' current hypers:
        {"kind": "two_point" or "", "a", "lookahead"}."""
        self._sync()
        return self._groups[0].handle.info()["observation"]

    def attenuations(self) -> dict[str, dict[str, float]]:
        """The DP-noise attenuation of each filtered state (those the
        optimizer's step names in attenuation or attenuation_t), as the
        runtime derives it for the first group's hypers: {state: {"steady":
        A, "finite": A_t after the steps taken}} — the share of σ_w² that
        reaches the state."""
        self._sync()
        return {a["state"]: {"steady": a["steady"], "finite": a["finite"]}
                for a in self._groups[0].handle.info()["attenuations"]}

    def enable_diagnostics(self) -> None:
        """Turns on the clamp_mass diagnostic (an optimizer whose .dsl declares
        ``diagnostic clamp_mass``): after each step the runtime computes the
        share of Σ|m̂| on coordinates whose corrected second moment sits on
        its floor ε_v. Off by default; the step kernel is the same."""
        for g in self._groups:
            g.handle.enable_diagnostics()

    def clamp_mass(self) -> list[float]:
        """The clamp_mass of the last step, one value per parameter group
        (with a process group: of this rank's slice)."""
        return [g.handle.clamp_mass() for g in self._groups]

    # --- gradients ----------------------------------------------------------

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Zeroes the flat gradient; the parameters' ``.grad`` stay views of it."""
        self._grad.zero_()
        self._adopt_grads()
        self._grad_invalid = ""

    def _adopt_grads(self) -> None:
        """Puts back into the flat gradient any ``.grad`` that was replaced
        (set to None, or a new tensor) since the layout."""
        off = 0
        for p in self._params():
            k = p.numel()
            view = self._grad[off:off + k]
            if p.grad is None or p.grad.data_ptr() != view.data_ptr():
                if p.grad is not None:
                    view.copy_(p.grad.reshape(-1))
                else:
                    view.zero_()
                p.grad = view.view_as(p)
            off += k

    def _rows(self, grads: Any, what: str) -> tuple[torch.Tensor, int]:
        """Per-example gradients, one tensor [k, *p.shape] per parameter (a
        dict keyed by parameter, a list in the groups' order, or None for
        each parameter's Opacus ``grad_sample``), as one contiguous
        [k, numel] float32 matrix on the parameters' device."""
        params = self._params()
        if grads is None:
            grads = [getattr(p, "grad_sample", None) for p in params]
            if any(g is None for g in grads):
                raise ValueError(f"fibergen: privatize: no {what} given and a parameter has no grad_sample")
        if isinstance(grads, dict):
            if missing := [i for i, p in enumerate(params) if p not in grads]:
                raise ValueError(f"fibergen: privatize: no {what} for parameters {missing}")
            grads = [grads[p] for p in params]
        grads = list(grads)
        if len(grads) != len(params):
            raise ValueError(f"fibergen: privatize: {len(grads)} {what} for {len(params)} parameters")
        k = grads[0].shape[0] if grads else 0
        for i, (g, p) in enumerate(zip(grads, params)):
            if tuple(g.shape) != (k, *p.shape):
                raise ValueError(f"fibergen: privatize: {what} {i} has shape {tuple(g.shape)}, "
                                 f"want {(k, *p.shape)} (examples first)")
        rows = torch.cat([g.detach().reshape(k, -1) for g in grads], dim=1) if k else \
            torch.zeros(0, self.numel, dtype=torch.float32, device=self._device)
        return rows.to(dtype=torch.float32, device=self._device).contiguous(), k

    def privatize(self, per_example_grads: Any = None, lookahead: Any = None, *,
                  scales: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, int]:
        """Sets the gradient of the next step from per-example gradients —
        a dict {parameter: [k, *p.shape]} as ``per_example_grads`` returns,
        a list in the order of the groups' parameters, or None to read each
        parameter's Opacus ``grad_sample``: each example's u =
        A·lookahead + (1−A)·per_example (the two_point observation;
        ``lookahead`` are the gradients taken inside ``with
        opt.lookahead():``, None for other optimizers) is clipped to C over
        all the parameters, and the clipped sum divided by the expected batch
        size B is written into the parameters' ``.grad``. With a process
        group, each rank passes its share of the batch and the sums are
        all-reduced. ``scales`` (one per example, e.g. from ``clip_scales``)
        replaces the clipping. Returns the scales and the number of examples
        clipped. A NaN or ±Inf raises NonFiniteExample; any failure (on any
        rank, with a process group: all raise) leaves ``step`` refusing until
        the next privatize or zero_grad, as the gradient holds no new sum."""
        try:
            result = self._privatize(per_example_grads, lookahead, scales)
        except Exception as e:
            self._grad_invalid = f"the last privatize failed ({e})"
            self._agree(2 - isinstance(e, NonFiniteExample))
            raise
        self._agree(0)
        if self._pg is not None:
            dist.all_reduce(self._grad, group=self._pg)
        for g in self._groups[1:]:  # group 0 privatized the flat gradient of them all
            g.handle.adopt_privatized(self._groups[0].handle)
        self._grad_invalid = ""
        self._grad_seen = self._grad._version
        return result

    def trust_clipped_grad(self) -> None:
        """Says that ``.grad`` holds now the mean over the batch of
        per-example gradients the trainer clipped to C itself (its own
        clipping; ghost clipping with ``clip_scales``), for the next
        ``step`` only. Nothing can check it: the accountant takes it on
        trust. Without it — or ``privatize``, which clips in the runtime — a
        step under DP settings (``set_dp``, ``set_budget``) refuses the
        gradient ``backward()`` wrote, which is not clipped. Call it after
        the gradient is written: a write after it voids it, and a gradient
        not written since the last step is refused (trust does not make a
        released gradient new)."""
        self._sync()
        self._adopt_grads()
        self._note_writes(agree=False)  # this rank's: the step agrees over the ranks
        for g in self._groups:
            g.handle.trust_clipped_gradient()
        self._grad_invalid = ""
        self._grad_seen = self._grad._version

    def _privatize(self, grads: Any, lookahead: Any, scales: Optional[torch.Tensor]) -> tuple[torch.Tensor, int]:
        """privatize on this rank's examples, into the flat gradient."""
        self._sync()
        self._adopt_grads()
        cur, k = self._rows(grads, "per-example gradients")
        look = self._rows(lookahead, "look-ahead gradients")[0] if lookahead is not None else None
        if look is not None and look.shape != cur.shape:
            raise ValueError(f"fibergen: privatize: {look.shape[0]} look-ahead examples, {k} current ones")
        if scales is not None:
            scales = scales.detach().to(torch.float32).contiguous().cpu()
            if tuple(scales.shape) != (k,):
                raise ValueError(f"fibergen: privatize: scales of shape {tuple(scales.shape)} for {k} examples")
        self._same_observation()
        out_scales = torch.empty(k, dtype=torch.float32)
        cuda = self._device.type == "cuda"
        if cuda:
            self._sync_stream()
        clipped = self._groups[0].handle.privatize(
            self._grad.data_ptr(), self.numel, cur.data_ptr() if k else 0,
            look.data_ptr() if look is not None and k else 0, k,
            scales.data_ptr() if scales is not None else 0, out_scales.data_ptr(), device=cuda)
        return out_scales, clipped

    def _agree(self, failure: int) -> None:
        """With a process group, tells every rank how privatize went on all
        (0 well, 1 a non-finite example, 2 another error), so that all raise
        together and the collectives stay paired."""
        worst = self._max_over_ranks(failure)
        if worst and not failure:
            self._grad_invalid = "privatize failed on another rank"
            raise (NonFiniteExample(f"fibergen: {self._grad_invalid} (a non-finite example)", -1) if worst == 1
                   else FibergenError(f"fibergen: {self._grad_invalid}"))

    def clip_scales(self, cur_norms: torch.Tensor, look_norms: Optional[torch.Tensor] = None,
                    dots: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Ghost clipping: the per-example scales min(1, C/‖u‖) from the norms
        of each example's gradients (and, for a two_point optimizer, of its
        look-ahead gradients and their inner products), computed by the
        runtime in float64. Weight each example's loss by its scale (and the
        observation's A, 1−A), backpropagate the sum, divide by B into
        ``.grad``; or pass the scales to ``privatize``."""
        self._sync()
        self._same_observation()
        f64 = lambda t: None if t is None else t.detach().to(torch.float64).contiguous().cpu()  # noqa: E731
        cur, look, dot = f64(cur_norms), f64(look_norms), f64(dots)
        k = cur.shape[0] if cur.dim() == 1 else -1
        for name, t in (("cur_norms", cur), ("look_norms", look), ("dots", dot)):
            if t is not None and (t.dim() != 1 or t.shape[0] != k):
                raise ValueError(f"fibergen: clip_scales: {name} has shape {tuple(t.shape)}, want ({k},) "
                                 "like cur_norms, one value per example")
        out = torch.empty(k, dtype=torch.float32)
        self._groups[0].handle.clip_scales(look.data_ptr() if look is not None else 0, cur.data_ptr(),
                                           dot.data_ptr() if dot is not None else 0, k, out.data_ptr())
        return out

    def _same_observation(self) -> None:
        if len(self._groups) == 1:
            return
        obs = [g.handle.info()["observation"] for g in self._groups]
        if any(o != obs[0] for o in obs):
            raise FibergenError(f"fibergen: the parameter groups observe differently ({obs}): clipping over all "
                                "parameters needs one observation; give the groups the same observation hypers")

    @contextlib.contextmanager
    def lookahead(self) -> Iterator[None]:
        """Puts the parameters at the look-ahead point of the next step,
        θ_t + γ·(θ_t − θ_{t−1}), for the second gradient of a two_point
        optimizer, and back on exit; ``step`` is refused inside."""
        self._sync()
        bufs = [g.handle.info()["lookahead_buffer"] for g in self._groups]
        if -1 in bufs:
            raise FibergenError(f"fibergen: {self._info['name']} has no two_point observation, so no look-ahead point")
        saved = self._theta.clone() if any(b > 0 for b in bufs) else None  # 0: θ_0 itself, before the first step
        if saved is not None:
            with torch.no_grad():
                for g, b in zip(self._groups, bufs):
                    if b > 0:
                        self._theta[g.lo:g.hi].copy_(g.states[b - 2])
                self._gather()
        self._in_lookahead = True
        try:
            yield
        finally:
            self._in_lookahead = False
            if saved is not None:
                with torch.no_grad():
                    self._theta.copy_(saved)

    # --- the step -------------------------------------------------------------

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        """One step on the gradient in ``.grad`` (privatized by ``privatize``,
        or the clipped mean the trainer wrote), adding the DP noise in the
        kernel. A NaN or ±Inf gradient entry skips the step — parameters,
        states, step counter and noise position unchanged — sets
        ``found_inf`` and warns, as torch.cuda.amp.GradScaler skips."""
        if self._in_lookahead:
            raise FibergenError("fibergen: step inside 'with opt.lookahead()': the parameters there are the look-ahead "
                                "point, not θ_t; step after the block")
        if self._broken:
            raise FibergenError(f"fibergen: {self._broken}: its groups are at different steps; open a new optimizer")
        if self._grad_invalid:
            raise FibergenError(f"fibergen: the gradient is not a privatized one: {self._grad_invalid}; "
                                "privatize the next batch (or zero_grad) before stepping")
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._sync()
        self._adopt_grads()
        self._note_writes()
        if self._device.type == "cuda":
            self._sync_stream()
        self.last_nonfinite = None
        if not self._step_groups():
            return self._skip(loss)
        self.found_inf = False
        self._gather()
        return loss

    def _note_writes(self, agree: bool = True) -> None:
        """Tells the runtime that the flat gradient was written since
        privatize, trust_clipped_grad or the last step — by a backward pass
        into the ``.grad`` views, a copy, anything but privatize — which
        torch's version counter of the buffer (shared by its views) shows:
        the runtime then releases it only where no DP settings ask for a
        privatized one. With a process group and ``agree``, a write on any
        rank counts on every rank, so that all step or none."""
        written = int(self._grad._version != self._grad_seen)
        if self._max_over_ranks(written) if agree else written:
            for g in self._groups:
                g.handle.gradient_written()
        self._grad_seen = self._grad._version

    def _step_groups(self) -> bool:
        """Steps every group, or none, returning False, where the gradient is
        not finite (and raising where the runtime refuses to release it).
        One group on one process: its step checks the gradient itself
        before it changes anything. Several groups or ranks: every part is
        checked before any steps, so that a step is all or nothing."""
        if len(self._groups) > 1 or self._pg is not None:
            if self._found_inf():
                return False
            for g in self._groups:
                self._step_group(g)  # checked: a NonFiniteGradient here is a bug, and raises
            return True
        try:
            self._step_group(self._groups[0])
        except NonFiniteGradient as e:
            self.last_nonfinite = self._locate(e, self._groups[0].lo + e.index)
            return False
        return True

    def _step_group(self, g: _Group) -> None:
        if self._device.type == "cuda":
            g.handle.step_device(self._ptrs(g), g.n, g.lo)
        else:
            g.handle.step()

    def _skip(self, loss: Any) -> Any:
        """Reports a step skipped for a non-finite gradient."""
        self.found_inf = True
        self.skipped_steps += 1
        warnings.warn(f"fibergen: step skipped: {self.last_nonfinite}", RuntimeWarning, stacklevel=4)
        return loss

    def _found_inf(self) -> bool:
        """Checks every group's gradient (every rank's, with a process group)
        before any steps, so that a step is all or nothing: True where one
        is not finite; a refusal to release it (stepped on already, not
        privatized) raises on every rank."""
        refused: Optional[FibergenError] = None
        for g in self._groups:
            try:
                if self._device.type == "cuda":
                    g.handle.check_device_gradient(self._grad[g.lo:].data_ptr() if g.n else 0, g.n)
                else:
                    g.handle.check_gradient()
            except NonFiniteGradient as e:
                self.last_nonfinite = self._locate(e, g.lo + e.index)
                break
            except FibergenError as e:
                refused = e
                break
        bad = self.last_nonfinite is not None
        worst = self._max_over_ranks(2 if refused else int(bad))
        if refused:
            raise refused
        if worst == 2:
            raise FibergenError("fibergen: another rank's step was refused: its gradient cannot be released")
        if worst and not bad:
            self.last_nonfinite = NonFiniteGradient("fibergen: another rank's gradient is not finite", -1, math.nan)
            bad = True
        return bad

    def _max_over_ranks(self, v: int) -> int:
        """The largest of every rank's v (v itself without a process group)."""
        if self._pg is None:
            return v
        t = torch.tensor([v], dtype=torch.int32, device=self._device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self._pg)
        return int(t.item())

    def _locate(self, e: NonFiniteGradient, index: int) -> NonFiniteGradient:
        """Names the parameter that holds flat gradient entry index."""
        off = 0
        for i, p in enumerate(self._params()):
            if index < off + p.numel():
                return NonFiniteGradient(f"fibergen: gradient entry {index - off} of parameter {i} "
                                         f"(shape {tuple(p.shape)}) is {e.value}", index, e.value,
                                         param=i, param_index=index - off)
            off += p.numel()
        return e

    def _sync_stream(self) -> None:
        """Waits for torch's current stream where it is not the default
        stream, on which the runtime launches (the legacy default stream)."""
        stream = torch.cuda.current_stream(self._device)
        if stream != torch.cuda.default_stream(self._device):
            stream.synchronize()

    def _gather(self) -> None:
        """All-gathers the ranks' slices of the parameters."""
        if self._pg is None:
            return
        parts = list(self._theta.split(self._slice))
        mine = parts[self._rank].clone()
        dist.all_gather(parts, mine, group=self._pg)

    # --- checkpoints ------------------------------------------------------------

    def _shapes(self) -> list[list[list[int]]]:
        return [[list(p.shape) for p in pg["params"]] for pg in self.param_groups]

    def state_dict(self) -> dict:
        """The optimizer's state: per group the runtime's checkpoint (step,
        seed, hypers, DP settings, privacy budget, build hash and the
        SHA-256 of the states beside it — as a uint8 tensor; keep it as
        private as the data, since the seed undoes the noise) and this
        rank's slice of each state; the param groups (every key but the
        parameters, which are indices); the layout."""
        self._sync()  # the checkpoint holds the hypers the groups hold now
        state = {}
        for i, g in enumerate(self._groups):
            states = [s.detach().clone() for s in g.states]
            host = _host(states)  # alive through the call that reads it
            blob = g.handle.save(_addrs(host), g.n)
            state[i] = {"checkpoint": torch.frombuffer(bytearray(blob), dtype=torch.uint8), "slice": [g.lo, g.hi],
                        **dict(zip(self._states, states))}
        groups, idx = [], 0
        for pg in self.param_groups:
            k = len(pg["params"])
            groups.append({**{h: v for h, v in pg.items() if h != "params"}, "params": list(range(idx, idx + k))})
            idx += k
        return {"state": state, "param_groups": groups,
                "fibergen": {"format": _STATE_DICT_FORMAT, "optimizer": self._info["name"],
                             "manifest_sha256": self._info["manifest_sha256"], "shapes": self._shapes(),
                             "world_size": self._world, "rank": self._rank}}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restores a state_dict of this optimizer's build and layout into an
        optimizer that has not stepped (resuming is then bit for bit the run
        that saved it, and never replays noise). The state_dict is checked —
        its format, optimizer, layout, the states' dtypes, shapes and
        finiteness, that every group's checkpoint is of one run at one step,
        then each checkpoint by the runtime, the states against the digest
        it holds, and that it was not resumed before (anywhere on this
        machine: a copy of the file, another process) — before anything
        changes; a mismatched, damaged or resumed one raises.
        ``allow_resume_again`` resumes a state resumed before, with a
        warning."""
        groups = self._check_state_dict(state_dict)
        infos = [g.handle.checkpoint_info(blob) for g, (blob, _) in zip(self._groups, groups)]
        self._same_run(infos)
        # The states the digests cover, as host memory alive until every load is done.
        host = [_host(states) if i["states_digest"] else [] for (_, states), i in zip(groups, infos)]
        for g, (blob, _), h in zip(self._groups, groups, host):
            g.handle.check_checkpoint(blob, _addrs(h), g.n)
        for i, (g, (blob, states), h) in enumerate(zip(self._groups, groups, host)):
            try:
                g.handle.load(blob, _addrs(h), g.n)
            except FibergenError as e:
                if i:  # every group was checked: only a race (another process resuming group i) gets here
                    self._broken = f"load_state_dict loaded groups 0 to {i - 1} and then failed ({e})"
                raise
            with torch.no_grad():
                for dst, src in zip(g.states, states):
                    dst.copy_(src)
        for g, pg, saved in zip(self._groups, self.param_groups, state_dict["param_groups"]):
            hypers = {h["name"]: h["value"] for h in g.handle.info()["hypers"]}
            pg.update({k: v for k, v in saved.items() if k != "params"}, **hypers)
            g.applied = dict(hypers)

    def _same_run(self, infos: list[dict]) -> None:
        """Refuses group checkpoints of different runs or steps (a state_dict
        mixed by hand); warns of one saved before the checkpoints held the
        states' digest (its states then load unchecked) and of one resumed
        before, which only ``allow_resume_again`` lets through."""
        if len({(i["step"], i["seed"]) for i in infos}) > 1:
            raise FibergenError("fibergen: load_state_dict: the groups' checkpoints are of different runs or steps "
                                f"(steps {[i['step'] for i in infos]}): a state_dict holds one run at one step")
        if not all(i["states_digest"] for i in infos):
            warnings.warn("fibergen: this state_dict predates the digest of the states (fibergen before ABI 4): its "
                          "states load unchecked; save it again to have them checked", RuntimeWarning, stacklevel=3)
        if resumed := next((i["resumed"] for i in infos if i["resumed"]), ""):
            if self._opts["allow_resume_again"]:
                warnings.warn(f"fibergen: this state was resumed before ({resumed}): resuming it again draws the noise "
                              "of the steps after it again, on other gradients", RuntimeWarning, stacklevel=3)

    def _check_state_dict(self, sd: Any) -> list[tuple[bytes, list[torch.Tensor]]]:
        """The checks of load_state_dict that need no runtime: the format,
        the optimizer, the layout, the states."""
        def bad(msg: str) -> FibergenError:
            return FibergenError(f"fibergen: load_state_dict: {msg}")
        if not isinstance(sd, dict) or not isinstance(sd.get("fibergen"), dict) or \
                sd["fibergen"].get("format") != _STATE_DICT_FORMAT:
            raise bad(f"not a state_dict of a fibergen optimizer (format {_STATE_DICT_FORMAT})")
        meta = sd["fibergen"]
        if meta.get("optimizer") != self._info["name"]:
            raise bad(f"state of {meta.get('optimizer')!r}, this optimizer is {self._info['name']!r}")
        if meta.get("shapes") != self._shapes():
            raise bad("the parameter groups differ in number or shape from the state_dict's")
        if (meta.get("world_size"), meta.get("rank")) != (self._world, self._rank):
            raise bad(f"state of rank {meta.get('rank')} of {meta.get('world_size')}, "
                      f"this is rank {self._rank} of {self._world}")
        if not isinstance(sd.get("param_groups"), list) or len(sd["param_groups"]) != len(self._groups):
            raise bad("its param_groups do not match the optimizer's")
        return [self._check_group(i, g, sd.get("state", {}).get(i), bad) for i, g in enumerate(self._groups)]

    def _check_group(self, i: int, g: _Group, st: Any, bad: Any) -> tuple[bytes, list[torch.Tensor]]:
        """Group i's checkpoint and states from a state_dict, checked."""
        blob = st.get("checkpoint") if isinstance(st, dict) else None
        if not (isinstance(blob, torch.Tensor) and blob.dtype == torch.uint8 and blob.dim() == 1):
            raise bad(f"group {i} has no checkpoint (a uint8 tensor)")
        if st.get("slice") != [g.lo, g.hi]:
            raise bad(f"group {i} holds coordinates {st.get('slice')}, this rank's are {[g.lo, g.hi]}")
        states = []
        for name in self._states:
            t = st.get(name)
            if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or tuple(t.shape) != (g.n,):
                raise bad(f"group {i}: state {name} should be a float32 tensor of {g.n} values, got "
                          f"{type(t).__name__} {getattr(t, 'dtype', '')} {tuple(getattr(t, 'shape', ()))}")
            if not bool(torch.isfinite(t).all()):
                raise bad(f"group {i}: state {name} holds a NaN or ±Inf")
            states.append(t)
        return blob.cpu().numpy().tobytes(), states

    def close(self) -> None:
        """Releases the runtime optimizers (the kernels, device resources)."""
        for g in getattr(self, "_groups", []):
            g.handle.close()


def _host(states: list[torch.Tensor]) -> list[torch.Tensor]:
    """The states as contiguous float32 host memory, for the runtime's
    digest (on the host, the states themselves)."""
    return [s.detach().to("cpu", torch.float32).contiguous() for s in states]


def _addrs(tensors: list[torch.Tensor]) -> list[int]:
    return [t.data_ptr() for t in tensors]


def _global_rank0(pg: Any) -> int:
    """The global rank of the process group's rank 0 (broadcast's src)."""
    if pg is None or pg is dist.group.WORLD:
        return 0
    get = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank  # torch 1.13
    return get(pg, 0)


def per_example_grads(model: torch.nn.Module, loss: Any, *batch: torch.Tensor, with_loss: bool = False) -> Any:
    """Each example's gradient of ``loss(model(inputs), *targets)`` — batch
    holds the inputs, then the targets, examples first — by torch.func (or
    functorch) vmap(grad(...)): a dict {parameter: [k, *p.shape]}, as
    ``Optimizer.privatize`` takes it whatever the groups' order. With
    ``with_loss``, also each example's loss, [k]: (grads, losses)."""
    try:
        from torch.func import functional_call, grad_and_value, vmap
    except ImportError:  # torch 1.13, Debian 12's
        from functorch import grad_and_value, vmap
        from torch.nn.utils.stateless import functional_call
    named = dict(model.named_parameters())
    params = {n: p.detach() for n, p in named.items()}

    def one(ps: dict, x: torch.Tensor, *targets: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, ps, (x.unsqueeze(0),))
        return loss(out, *[t.unsqueeze(0) for t in targets])

    grads, losses = vmap(grad_and_value(one), in_dims=(None,) + (0,) * len(batch))(params, *batch)
    by_param = {p: grads[n] for n, p in named.items()}
    return (by_param, losses) if with_loss else by_param
