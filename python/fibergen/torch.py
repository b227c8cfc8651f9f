"""fibergen optimizers as torch.optim.Optimizer.

``Optimizer(model.parameters(), "fiber", lr=3e-3)`` opens a shipped
optimizer by its name (or a .dsl file, compiled once into the per-user
cache, or a directory that ``fibergen build`` wrote) and steps the
model's parameters with its fused kernel, the DP noise drawn inside it: the
host kernel (``<name>.so``) on every core for CPU tensors, the PTX through
the CUDA driver for CUDA tensors. The host side — hyper checks, per-step
scalars, the attenuation, the noise position, privatization, checkpoints,
the privacy accountant — is fibergen's Go runtime, reached through
libfibergen.so (``fibergen._lib``); nothing here re-implements it.

Layout: the parameters of all groups live in one flat buffer of their dtype
(float32, bfloat16 or float16: the kernels are compiled for it; the
parameters become views into it), their gradients in another, and one
runtime optimizer steps them: each group is a range of its buffers with the
group's hypers (runtime.Optimizer.RegisterRange), so privatization clips
each example over all of them at once, the groups share one observation and
a step changes all of them or none — the runtime's rules, not this
module's — and the noise of a coordinate does not depend on how the groups
or ranks split the buffers. With a process group (``torch.distributed``)
every rank keeps the states of its shard of the flat buffers only (ZeRO-1,
laid out by the library: fg_shard), steps that shard and all-gathers the
parameters. docs/python.md is the guide.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

import torch
import torch.distributed as dist

from . import _abi, _lib
from ._lib import FibergenError, NonFiniteExample, NonFiniteGradient

__all__ = ["Optimizer", "per_example_grads", "CyclicBatchSampler", "FibergenError", "NonFiniteGradient",
           "NonFiniteExample"]

# The state_dict's format: 2 since one runtime optimizer steps every group
# (ABI 5), whose one checkpoint each group's entry holds; 1, a runtime
# optimizer per group, loads where there is one group (the same checkpoint).
_STATE_DICT_FORMAT = "fibergen-torch-2"
_FORMAT_ONE_GROUP = "fibergen-torch-1"

# The options whose difference between ranks would make one rank refuse
# what another does (a hyper, a look-ahead weight, a second step, a
# resume), leaving the others waiting in a collective: the ranks agree on
# them when the optimizer opens.
_AGREED_OPTIONS = ("allow_extrapolation", "allow_resume_again", "allow_unstable", "allow_gradient_reuse", "noise_mode")


class _Group:
    """One parameter group: this rank's part [lo, hi) of the flat buffers'
    coordinates, which are the runtime optimizer's buffers from off on (its
    ranges), and its states, views of the optimizer's."""

    def __init__(self, handle: _lib.Handle, name: str, lo: int, hi: int, off: int):
        self.handle, self.name, self.lo, self.hi, self.off = handle, name, lo, hi, off
        self.states: list[torch.Tensor] = []
        # The runtime's ranges that the group's coordinates are, in order:
        # none where the group is the whole optimizer, one a parameter where
        # the step reads per-tensor reductions (each parameter's norm is its
        # own), else the group whole.
        self.ranges: list[str] = []
        # Every hyper's value as the runtime holds it for the group (those
        # it derives included: fg_info), which the param group's values are
        # compared with; and, for a group past the first, the values it sets
        # as its range's own (the runtime's overrides).
        self.applied: dict[str, float] = {}
        self.own: dict[str, float] = {}

    @property
    def n(self) -> int:
        return self.hi - self.lo


def _global_rank(pg: Any, r: int) -> int:
    """Rank r of process group pg as the default group numbers it, which
    broadcast's src is."""
    if pg is None or pg is dist.group.WORLD:
        return r
    return dist.get_global_rank(pg, r) if hasattr(dist, "get_global_rank") else dist.distributed_c10d._get_global_rank(pg, r)


def _failing_together(init: Any) -> Any:
    """Optimizer.__init__ such that, with a process group, a rank that fails
    before the ranks agree (Optimizer._agree_at_open) — a bad hyper, no
    parameters, a missing build — still joins that one collective, with its
    error, so that every other rank raises too instead of waiting for it."""
    @functools.wraps(init)
    def opening(self: "Optimizer", *args: Any, process_group: Optional[Any] = None, **kwargs: Any) -> None:
        self._agreed = False
        try:
            init(self, *args, process_group=process_group, **kwargs)
        except Exception as e:
            if process_group is not None and not self._agreed:
                with contextlib.suppress(Exception):  # this rank's own error is the one to raise
                    _agree(process_group, "open the optimizer", {"error": f"{type(e).__name__}: {e}"},
                           getattr(self, "_device", None))
            raise
    return opening


class _Names:
    """The names a group's hypers answer to: each hyper's own and its alias
    (docs/dsl.md: ``alias weight_decay``, ``alias betas[0]``), as the
    library reports them from the optimizer's manifest — the binding keeps
    no table of its own."""

    def __init__(self, hypers: list[dict]):
        self.hypers = [h["name"] for h in hypers]
        self.plain: dict[str, str] = {}  # alias -> hyper
        self.seqs: dict[str, list[str]] = {}  # alias -> its elements' hypers, by index
        for h in hypers:
            a = h.get("alias")
            if a is None:
                continue
            if a.get("index") is None:
                self.plain[a["name"]] = h["name"]
            else:
                seq = self.seqs.setdefault(a["name"], [])
                seq.extend([""] * (a["index"] + 1 - len(seq)))
                seq[a["index"]] = h["name"]

    def accepted(self) -> str:
        seqs = [f"{a}=({', '.join(hs)})" for a, hs in self.seqs.items()]
        return ", ".join(self.hypers + [f"{a} ({h})" for a, h in self.plain.items()] + seqs)

    def knows(self, key: str) -> bool:
        """Whether key is a hyper's name or an alias."""
        return key in self.hypers or key in self.plain or key in self.seqs

    def resolve(self, values: dict, who: str) -> dict[str, Any]:
        """values by their own names or aliases, by the hypers' own names;
        raises on a name that is neither, a sequence of the wrong length, a
        value that is not a real number (a one-element tensor is) and a
        hyper given twice with two values."""
        if unknown := sorted(k for k in values if not self.knows(k)):
            raise ValueError(f"fibergen: {who} has no hyper {', '.join(unknown)} (it accepts: {self.accepted()})")
        out: dict[str, Any] = {}
        for k, v in values.items():
            for h, x in self._expand(k, v):
                _real(x, f"{who}: hyper {h}")
                if h in out and out[h] != x:
                    raise ValueError(f"fibergen: {who}: hyper {h} given twice, {out[h]!r} and {x!r} "
                                     f"({k} sets it too): give one")
                out[h] = x
        return out

    def _expand(self, key: str, value: Any) -> list[tuple[str, Any]]:
        if key in self.seqs:
            hs = self.seqs[key]
            if not isinstance(value, (tuple, list)) or len(value) != len(hs):
                raise ValueError(f"fibergen: {key} = {value!r}: want {len(hs)} numbers, ({', '.join(hs)})")
            return list(zip(hs, value))
        return [(self.plain.get(key, key), value)]

    def aliases(self, values: dict[str, Any]) -> dict[str, Any]:
        """The aliases' values from the hypers' (a sequence as a tuple)."""
        out: dict[str, Any] = {a: values[h] for a, h in self.plain.items() if h in values}
        out.update({a: tuple(values[h] for h in hs) for a, hs in self.seqs.items() if all(h in values for h in hs)})
        return out


class _ParamGroup(dict):
    """A param group whose hypers answer to their aliases too, as torch's
    optimizers name them: ``group["weight_decay"]`` is ``group["wd"]``,
    ``group["betas"]`` the pair (beta1, beta2). Both names are keys; setting
    either (an LR scheduler writes ``group["lr"]``) sets the hyper, and the
    runtime gets it at the next step."""

    def __init__(self, names: _Names, who: str, group: dict):
        super().__init__()
        self._names, self._who = names, who
        self.given: set[str] = set()  # the hypers the user, or a scheduler, set: the others the runtime may derive
        self.written: set[str] = set()  # the hypers set since the optimizer last handed them to the runtime
        self.live: set[str] = set()  # given hypers whose value is not a plain number (a tensor may change in place)
        self.update(group)

    def __setitem__(self, key: str, value: Any) -> None:
        names = self.__dict__.get("_names")  # unset while a copy is being unpickled
        if names is None or not names.knows(key):
            super().__setitem__(key, value)
            return
        own = names.resolve({key: value}, self._who)
        self.given.update(own)
        self.show(own)
        self.written.update(own)
        self.live.update(h for h, x in own.items() if type(x) not in (float, int))

    def show(self, values: dict[str, Any]) -> None:
        """Sets hypers by their own names, and their aliases, without
        marking them changed: the values the runtime holds (one it derives,
        as fiber_cosine's lr_min from lr)."""
        names = self._names
        self.live.difference_update(values)
        for h, x in values.items():
            super().__setitem__(h, x)
        current = {h: self[h] for h in names.hypers if h in self}
        for a, x in names.aliases(current).items():
            super().__setitem__(a, x)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def __ior__(self, other: Any) -> "_ParamGroup":
        self.update(other)
        return self

    def __delitem__(self, key: str) -> None:
        self._keep(key)
        super().__delitem__(key)

    def pop(self, key: str, *default: Any) -> Any:
        self._keep(key)
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, Any]:
        raise TypeError(f"fibergen: {self._who}: a param group's hypers cannot be removed")

    def clear(self) -> None:
        self.popitem()

    def _keep(self, key: str) -> None:
        """Refuses to remove a hyper (by its name or an alias): the runtime
        steps with every hyper, and a group without one would show nothing
        for it."""
        if self._names.knows(key):
            raise TypeError(f"fibergen: {self._who}: hyper {key} cannot be removed from a param group; set it instead")

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]


class Optimizer(torch.optim.Optimizer):
    """A fibergen optimizer over ``params``: ``optimizer`` names a shipped
    optimizer (``"dp_adamw"``, ``"fiber"``: the files of fibergen's
    ``optimizers/``), a ``.dsl`` file of your own, or a directory that
    ``fibergen build`` wrote. A source is compiled with LLVM on first use
    into the per-user cache that ``fibergen build`` shares
    (``$FIBERGEN_CACHE``, else ``~/.cache/fibergen``) and found there after,
    from any working directory; its errors raise ``FibergenError`` with
    their carets, its warnings warn.

    Keyword arguments set hypers for every group (each group of ``params``
    may set its own, e.g. ``{"params": biases, "wd": 0}``), by their names
    or their aliases, torch's names where the optimizer declares them
    (``weight_decay=0.1``, ``betas=(0.9, 0.95)``; docs/dsl.md, ``alias``),
    which ``param_groups`` show too; the runtime
    checks each range, the filters' stability and the observation, and
    refuses a setting with a ``FibergenError``. ``seed`` fixes the noise seed
    (default: a secret one from the OS, shared by every group and rank);
    ``secure=True`` draws the noise in the secure mode instead (docs/noise.md:
    ChaCha20 keyed by 256 bits from the OS, the noise snapped to a grid),
    which takes no seed — ``seed=`` with it raises ``ValueError``, since a
    seed known to anyone makes the noise subtractable — and whose key every
    rank of a ``process_group`` takes from rank 0 at open (it is never
    shown); a state_dict resumes only in the mode it was saved in;
    ``threads`` caps the host kernel's threads (default: every core);
    the parameters are float32, bfloat16 or float16, all of one dtype,
    which the kernels load and store (compiled for it on first use; the
    gradient the noise is added to stays float32, docs/python.md), and
    ``param_rounding="stochastic"`` rounds their stores stochastically
    rather than to nearest (a bfloat16 update smaller than half a unit in
    the last place then moves the parameter in expectation);
    ``process_group`` shards the states over the ranks of a
    ``torch.distributed`` group (ZeRO-1): every rank opens the optimizer
    alike — the build, the allow_ options, the layout, the seed (the same
    on every rank, or None on every rank) and every group's hypers — or
    all raise, saying which rank differs in what; ``allow_extrapolation`` permits a
    two_point weight outside [0, 1]; ``allow_resume_again`` lets
    ``load_state_dict`` resume, with a warning, a state resumed before on
    this machine, which it otherwise refuses (two runs resumed from one state
    draw the same noise on different gradients; the record of resumes is in
    ``$FIBERGEN_STATE_DIR``, else ``~/.local/state/fibergen``); ``allow_unstable`` permits hypers at which a state
    grows without bound (a filter of spectral radius above 1);
    ``allow_gradient_reuse`` lets ``step`` run again on the gradient it
    stepped on, for benchmarks, never for DP training (it releases a batch
    twice); ``clamp_warning=False`` turns off the runtime's warning (a
    ``RuntimeWarning``, once) that a corrected second moment sits on its
    fixed floor for much of the update (clamp_mass above 0.2 for 50 steps,
    docs/runtime.md), which costs the states' read every 10th step.

    Before stepping, give the noise: ``set_dp`` (or ``set_budget``) for DP
    training, ``set_noise`` to replay a known σ_w². Each iteration then
    either calls ``privatize`` on per-example gradients, or writes the
    clipped mean gradient into the parameters' ``.grad`` and says so with
    ``trust_clipped_grad``, and calls ``step``, which adds the noise inside
    the kernel. A gradient is released once: ``step`` refuses the gradient
    it stepped on, and, under DP settings, one that ``backward()`` (or any
    write but ``privatize``) left in ``.grad`` without ``trust_clipped_grad``.
    """

    @_failing_together
    def __init__(self, params: Iterable[Any], optimizer: str | os.PathLike, *, seed: Optional[int] = None,
                 threads: int = 0, process_group: Optional[Any] = None, allow_extrapolation: bool = False,
                 allow_resume_again: bool = False, allow_unstable: bool = False, allow_gradient_reuse: bool = False,
                 clamp_warning: bool = True, secure: bool = False, param_rounding: str = "nearest", **hypers: float):
        if isinstance(params, torch.Tensor):  # as torch.optim.Optimizer refuses it, before list() splits it
            raise TypeError(f"fibergen: params should be an iterable of Tensors or dicts, but got {torch.typename(params)}")
        params = list(params)
        found = _lib.resolve(optimizer, _param_storage(params, param_rounding))
        if found["warnings"]:
            warnings.warn(f"fibergen: {found['warnings']}", stacklevel=3)  # each line names its file:line:col
        self._path = Path(found["dir"])
        if not isinstance(threads, int) or threads < 0:
            raise ValueError(f"fibergen: threads = {threads!r}: want a whole number >= 0 (0: every core)")
        if not isinstance(secure, bool):
            raise ValueError(f"fibergen: secure = {secure!r}: want True (secure noise) or False (the default, philox)")
        if secure and seed is not None:
            raise ValueError("fibergen: seed= with secure=True: secure noise takes its key from the operating system and "
                             "no seed, since a seed that anyone knows or can guess makes every step's noise recomputable, "
                             "and so subtractable from the released parameters (a reproducible run draws in the default "
                             "mode, secure=False)")
        # The resume record's directory as Python sees the environment now
        # (the library's Go runtime saw it once, when it was loaded).
        self._opts = {"threads": threads, "allow_extrapolation": allow_extrapolation,
                      "allow_resume_again": allow_resume_again, "allow_unstable": allow_unstable,
                      "allow_gradient_reuse": allow_gradient_reuse, "state_dir": os.environ.get("FIBERGEN_STATE_DIR", ""),
                      "no_clamp_warning": not clamp_warning, "noise_mode": "secure" if secure else "philox"}
        probe = _lib.Handle(self._path, backend="go", **self._opts)
        self._info = probe.info()
        # each parameter a range of its own: per-tensor reductions, or rows and columns (its shape)
        self._per_tensor = bool(self._info.get("reductions")) or self._info["lines"]
        self._states = self._info["buffers"][_abi.FIRST_STATE:]
        self._clamp_watch = bool(self._info["clamp_warning"])  # the runtime may warn after a step
        self._names = _Names(self._info["hypers"])
        hypers = self._names.resolve(hypers, self._info["name"])
        if hypers:  # the runtime derives the defaults written as expressions of them (docs/dsl.md)
            probe.set_hypers({k: float(v) for k, v in hypers.items()})
        defaults = {h["name"]: h["value"] for h in probe.info()["hypers"]}
        defaults.update(self._names.aliases(defaults))
        self._given = set(hypers)  # every group's, besides those the group gives
        self._built = False
        super().__init__(params, defaults)
        self._pg = process_group
        self._rank, self._world = (dist.get_rank(process_group), dist.get_world_size(process_group)) \
            if process_group is not None else (0, 1)
        self._sources = [_global_rank(process_group, r) for r in range(self._world)]  # broadcast's src of each rank
        if seed is not None and not (isinstance(seed, int) and 0 <= seed < 1 << 64):
            raise ValueError(f"fibergen: seed = {seed!r}: want a whole number in [0, 2^64)")
        self._layout()
        self._open()
        if secure:  # every rank draws with rank 0's key, which only the collective carries
            key = self._agree_at_open(None, self._handle.share_key())
            if self._pg is not None:
                self._handle.set_key(key)
        else:
            self._handle.set_seed(self._agree_at_open(seed, probe.seed()))
        probe.close()
        self.found_inf = False  # the last step was skipped for a NaN or ±Inf gradient
        self.skipped_steps = 0
        self.last_nonfinite: Optional[NonFiniteGradient] = None
        self._in_block: Optional[tuple[str, str]] = None  # inside lookahead() or at_state(): (the block, what θ is there)
        self._lookahead_at: Optional[int] = None  # _lookahead_buffer's answer, once it is a state's
        self._saved_theta: Optional[torch.Tensor] = None  # lookahead()'s copy of θ, reused
        self._grad_invalid = ""  # why step must not read the gradient (a privatize failed on some rank)
        self._nclip: Optional[int] = None  # the DP settings' clip groups (0: one norm), None: ask the runtime
        # Where the gradient is sampled (_seen): positions of the OS's drawing, not the noise seed's.
        self._probe_gen = torch.Generator(device=self._grad.device).manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
        self._seen()

    def __getstate__(self) -> Any:
        raise TypeError("fibergen: an Optimizer holds kernels and device memory and cannot be pickled or "
                        "deep-copied: save opt.state_dict() and load it into a new Optimizer")

    # --- layout -----------------------------------------------------------

    def add_param_group(self, param_group: dict) -> None:
        if self._built:
            raise FibergenError("fibergen: add every parameter group when constructing the optimizer: "
                                "its parameters live in flat buffers laid out once")
        name = self._info["name"]
        params = _group_params(param_group)
        if len({id(p) for p in params}) != len(params):  # torch warns only; one parameter would take two ranges
            twice = next(i for i, p in enumerate(params) if any(p is q for q in params[:i]))
            raise ValueError(f"fibergen: parameter {twice} of parameter group {len(self.param_groups)} is an earlier "
                             "one again: give each parameter once")
        own = self._names.resolve({k: v for k, v in param_group.items() if k != "params"}, name)
        group = _ParamGroup(self._names, name, {k: v for k, v in param_group.items() if k == "params"})
        group.update({h: v for h, v in self.defaults.items() if h in self._names.hypers}, **own)
        group.given = self._given | set(own)
        group.written = set(group.given)  # the defaults filled in are not given: the runtime derives those
        super().add_param_group(group)

    def _params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _narrow(self) -> bool:
        """Whether the parameters are stored narrower than float32: their
        ``.grad`` then views a buffer of their dtype, apart from the float32
        gradient the kernels read (_pgrad)."""
        return self._pgrad is not self._grad

    def _layout(self) -> None:
        """Moves the parameters into one flat buffer and their gradients into
        another, padded so that every rank's shard has the same length (the
        library lays out the shards)."""
        params = self._params()
        if not params:
            raise ValueError("fibergen: the optimizer got no parameters")
        dev = params[0].device
        if dev.type not in ("cpu", "cuda"):
            raise FibergenError(f"fibergen: parameters on {dev}: the kernels run on the CPU and on CUDA devices")
        for i, p in enumerate(params):
            if p.device != dev:
                raise FibergenError(f"fibergen: parameter {i} is on {p.device}, parameter 0 on {dev}: "
                                    "every parameter must be on one device, as the kernels are")
        self.numel = sum(p.numel() for p in params)
        # per-tensor reductions: each parameter a tensor of the layout, wholly one rank's (runtime.ShardWhole)
        sizes = [p.numel() for p in params] if self._per_tensor else \
            [sum(p.numel() for p in pg["params"]) for pg in self.param_groups]
        self._shard = _lib.shard(sizes, self._world, self._rank, whole=self._per_tensor)
        self._slice = self._shard["slice"]
        # unequal shards (bounds) hold exactly the parameters; equal ones world slices
        total = self._shard["bounds"][-1] if "bounds" in self._shard else self._slice * self._world
        self._device = dev
        self._theta = self._buffer(_abi.THETA_BUFFER, total)
        self._grad = self._buffer(_abi.GRAD_BUFFER, total)
        # What .grad views: the kernels' float32 gradient, or one of the
        # parameters' narrower dtype, which torch requires of a .grad
        # (privatize rounds the clipped mean into it; a trainer's write is
        # widened into the float32 one: _note_writes).
        self._pgrad = self._grad if self._theta.dtype == torch.float32 else torch.zeros_like(self._theta)
        off = 0
        self._offs: list[int] = []  # each parameter's offset in the flat buffers
        with torch.no_grad():
            for p in params:
                k = p.numel()
                self._theta[off:off + k].copy_(p.reshape(-1))
                p.data = self._theta[off:off + k].view_as(p)
                p.grad = self._pgrad[off:off + k].view_as(p)
                self._offs.append(off)
                off += k
        self._rows_bufs: list[Optional[torch.Tensor]] = [None, None]  # privatize's per-example rows, reused
        self._segments = _lib.Segments(self._offs, [p.numel() for p in params])  # privatize's tensors read in place
        self._built = True

    def _buffer(self, k: int, n: int) -> torch.Tensor:
        """n zeros for the k-th flat buffer (theta, g, the states), of its
        dtype (fg_info's dtypes: a state declared ``state m: bf16 = 0`` is
        bfloat16), on the CPU as far into its storage as the runtime starts
        its own (fg_info's host_buffer_pad, in float32s: buffers allocated
        alike all start at one offset in their pages, and the host step's
        loads then alias its stores)."""
        dtype = _DTYPES[self._info["dtypes"][k]]
        size = torch.empty(0, dtype=dtype).element_size()
        pad = self._info["host_buffer_pad"][k] * 4 // size if self._device.type == "cpu" else 0
        return torch.zeros(pad + n, dtype=dtype, device=self._device)[pad:]

    def _open(self) -> None:
        """Opens the runtime optimizer of this rank's shard: the groups are
        ranges of its buffers, with their own hypers, where there are
        several (one group is the optimizer itself, as before ABI 5)."""
        self._lo = self._shard["lo"]  # the global index of the shard's first coordinate: the noise's offset
        cuda = self._device.type == "cuda"
        if cuda and self._info["lines"]:
            raise FibergenError(f"fibergen: {self._info['name']} has states per row or per column, which no kernel "
                                "computes yet: it runs on the CPU only, on the reference (docs/dsl.md, \"Rows and columns\")")
        # states per row or per column run on the reference (backend go): no kernel computes them yet
        opts = dict(self._opts, backend="cuda", device=self._device.index or 0, offset=self._lo) if cuda \
            else dict(self._opts, backend="go" if self._info["lines"] else "cpu", offset=self._lo)
        self._handle = _lib.Handle(self._path, **opts)
        self._groups: list[_Group] = []
        off = 0
        for i, (lo, hi) in enumerate(self._group_parts()):
            g = _Group(self._handle, f"group{i}", lo, hi, off)
            if self._per_tensor:
                parts = self._param_parts(i)
                g.ranges = [f'param_groups[{i}]["params"][{j}]' for j in range(len(parts))]  # what a refusal names
                for name, (a, b), p in zip(g.ranges, parts, self.param_groups[i]["params"]):
                    self._handle.register_range(name, b - a)
                    if self._info["lines"] and b - a == p.numel():  # this rank's (or empty): its rows and columns
                        self._handle.set_tensor_shape(name, list(p.shape) or [1])
            elif len(self._shard["parts"]) > 1:
                g.ranges = [g.name]
                self._handle.register_range(g.name, g.n)
            self._groups.append(g)
            off += g.n
        self._n = off
        self._sent: set[str] = set()  # group 0's hypers handed to the runtime: it no longer derives them
        self._refresh_hypers()  # the runtime's defaults
        self._apply_hypers()
        self._state_bufs = [self._buffer(_abi.FIRST_STATE + k, self._n) for k in range(len(self._states))]
        for g in self._groups:
            g.states = [s[g.off:g.off + g.n] for s in self._state_bufs]
        self._expose_states()
        self._bound = self._ptrs()  # the buffers' addresses, which _sync keeps current
        self._bases = self._base_ptrs()
        if cuda:
            self._handle.init_device_states(self._bound, self._n)
        else:
            self._handle.use_buffers(self._bound, self._n)

    def _param_parts(self, i: int) -> list[list[int]]:
        """Group i's parameters' [lo, hi) in this rank's shard, where the
        layout's tensors are the parameters (each whole or empty)."""
        k = sum(len(pg["params"]) for pg in self.param_groups[:i])
        return self._shard["parts"][k:k + len(self.param_groups[i]["params"])]

    def _group_parts(self) -> list[tuple[int, int]]:
        """Each group's [lo, hi) in this rank's shard, one after the other
        from the shard's start."""
        if not self._per_tensor:
            return [tuple(p) for p in self._shard["parts"]]
        out: list[tuple[int, int]] = []
        for i in range(len(self.param_groups)):
            parts = self._param_parts(i)
            lo = parts[0][0] if parts else (out[-1][1] if out else self._shard["lo"])
            out.append((lo, parts[-1][1] if parts else lo))
        return out

    def _expose_states(self) -> None:
        """Fills torch's ``state``: for every parameter this rank holds whole,
        each state by name, as a view of the flat buffer shaped like the
        parameter (``opt.state[p]["m"]``), which the steps update in place;
        not a noise block's buffers, which hold past noise (docs/dsl.md)."""
        self.state.clear()
        for p, off in zip(self._params(), self._offs):
            lo = off - self._lo
            if 0 <= lo and lo + p.numel() <= self._n:
                self.state[p] = {name: buf[lo:lo + p.numel()].view_as(p) for name, buf in zip(self._states, self._state_bufs)
                                 if name not in self._info["noise_buffers"]}
        self._line_views: list[tuple[str, str, torch.Tensor]] = []  # (range, state, its copy in state[p])
        for i, pg in enumerate(self.param_groups):
            for name, p in zip(self._groups[i].ranges if self._info["line_states"] else [], pg["params"]):
                if p in self.state:
                    rows, cols = (p.shape[:-1].numel(), p.shape[-1]) if p.dim() else (1, 1)  # the runtime's rows and columns
                    for s in self._info["line_states"]:
                        n = rows if s["axis"] == "rows" else cols
                        self._line_views.append((name, s["name"], self.state[p].setdefault(s["name"], torch.empty(n, dtype=torch.float32))))
        self._read_lines()

    def _read_lines(self) -> None:
        """Copies the states per row or per column into their tensors in
        ``state[p]`` (the runtime keeps them: they are copies, refreshed
        after every step and load)."""
        for rng, name, t in self._line_views:
            if t.numel():
                self._handle.tensor_state(rng, name, t.data_ptr(), t.numel())

    def _ptrs(self) -> list[int]:
        """The shard's buffers, theta, g, states, as addresses."""
        bufs = [self._theta[self._lo:self._lo + self._n], self._grad[self._lo:self._lo + self._n], *self._state_bufs]
        return [b.data_ptr() if self._n else 0 for b in bufs]

    def _base_ptrs(self) -> list[int]:
        """Where the flat buffers start: _ptrs changes where these do, and
        reading them makes no views."""
        return [self._theta.data_ptr(), self._grad.data_ptr(), *[b.data_ptr() for b in self._state_bufs],
                self._pgrad.data_ptr()]

    def _agree_at_open(self, seed: Optional[int], drawn: Any) -> Any:
        """The seed of every rank (in secure mode the key, drawn, of rank
        0's runtime optimizer), once the ranks agree on what they open:
        with a process group, one all_gather_object of each rank's facts
        (_open_facts) before any other collective, raising on every rank
        where a rank's differ from rank 0's or a rank failed to get here.
        The seed is the one given on every rank, else (seed=None on every
        rank) the one the OS drew on rank 0, which the same collective
        carries; None on some ranks only is a difference."""
        if self._pg is None:
            self._agreed = True
            return drawn if seed is None else seed
        facts = self._open_facts(seed)  # a failure here still joins the collective, with its error
        self._agreed = True
        every = _agree(self._pg, "open the optimizer", facts, self._device,
                       drawn=drawn if self._rank == 0 else None)
        return every[0]["drawn"] if seed is None else seed

    def _open_facts(self, seed: Optional[int]) -> dict[str, Any]:
        """What every rank must open alike: the build (the manifest hash the
        library reports, which covers the kernels' ABI stamp), the options
        that decide what the runtime refuses, the layout (each group's
        parameter shapes, the shard length fg_shard gives), the seed and
        every group's hypers as the param groups hold them."""
        facts = {"optimizer": self._info["name"], "build (manifest_sha256)": self._info["manifest_sha256"],
                 **{k: self._opts[k] for k in _AGREED_OPTIONS},
                 "layout (parameter groups)": len(self.param_groups), "shard length": self._slice, "seed": seed}
        for i, pg in enumerate(self.param_groups):
            facts[f"layout (parameter shapes of group {i})"] = [list(p.shape) for p in pg["params"]]
            facts.update({f"{k} of group {i}": _plain(v) for k, v in pg.items() if k != "params"})
        return facts

    # --- settings ---------------------------------------------------------

    def _apply_hypers(self) -> None:
        """Hands the groups' hypers to the runtime where they changed (e.g.
        by an LR scheduler), once a param group says one was set: group 0's
        as the optimizer's, every other group's where they differ from group
        0's as its range's own. Only the hypers given (by keyword, in the
        group, by a scheduler) go: the runtime derives the others (docs/dsl.md),
        and the param groups then show what it derived. The runtime checks
        them, and refuses a hyper that shapes the observation differing
        between groups (one observation forms every example's gradient)."""
        pgs = self.param_groups
        if not any(pg.written or pg.live for pg in pgs):
            return
        first = self._groups[0]
        # group 0's written hypers that the runtime derives or holds otherwise: a value equal to the one it
        # derived goes too, as it is now given (a later lr then moves it no more)
        base = {k for k in pgs[0].written | pgs[0].live if k not in self._sent or float(pgs[0][k]) != first.applied[k]}
        for pg in pgs[1:]:  # the others keep theirs, as torch's groups do
            pg.given |= base
        values = [{k: float(pg[k]) for k in pg.given} for pg in pgs]
        if base:
            self._handle.set_hypers({k: values[0][k] for k in base})
            self._sent |= base
        overrides = False
        for g, v in zip(self._groups[1:], values[1:]):
            # a group's own value: one that differs from group 0's, or one group 0 did not give (which the
            # runtime may derive for each group from the group's own hypers: fiber_cosine's lr_min)
            if (own := {k: x for k, x in v.items() if k not in values[0] or x != values[0][k]}) != g.own:
                self._handle.set_tensors_hypers(g.ranges, own)
                overrides = True
        if base or overrides:
            self._refresh_hypers()
            self._show_hypers()
        for pg in pgs:
            pg.written.clear()

    def _refresh_hypers(self) -> None:
        """Takes every group's hypers as the runtime holds them, and a
        group's own (its range's overrides): of each group's first range, as
        its ranges have the same."""
        info = self._handle.tensor_hypers([g.ranges[0] for g in self._groups[1:] if g.ranges])
        base = {h["name"]: h["value"] for h in info["hypers"]}
        tensors = {t["name"]: t for t in info["tensors"]}
        for g in self._groups:
            t = tensors[g.ranges[0]] if g is not self._groups[0] and g.ranges else None
            g.applied = {h["name"]: h["value"] for h in t["hypers"]} if t else dict(base)
            g.own = dict(t["own"]) if t else {}

    def _show_hypers(self) -> None:
        """Shows in the param groups the hypers the runtime derived, once
        it took the given ones: those not given, and a given one whose value
        it holds otherwise (derived there, as after a load of a state_dict
        that does not say which were given); a given value the runtime holds
        keeps its object (an int stays an int)."""
        for g, pg in zip(self._groups, self.param_groups):
            pg.show({k: v for k, v in g.applied.items() if k not in pg.given or float(pg[k]) != v})

    def _sync(self) -> None:
        """Brings the runtime up to date with the trainer's side: the groups'
        hypers (a scheduler may have changed them), and, on the CPU, where the
        flat buffers are now (checking the parameters are still views of
        them)."""
        self._apply_hypers()
        if (bases := self._base_ptrs()) != self._bases:  # the storage moved (share_memory_)
            self._rebind(bases)
        params = self._params()
        if len(params) != len(self._offs):
            raise FibergenError(f"fibergen: the parameter groups hold {len(params)} parameters, {len(self._offs)} when "
                                "the optimizer was created: add every parameter group when constructing it")
        theta, size = self._bases[0], self._theta.element_size()
        for i, (p, off) in enumerate(zip(params, self._offs)):
            if p.numel() and p.data_ptr() != theta + size * off or p.device != self._device:  # an empty one has no address
                raise FibergenError(
                    f"fibergen: parameter {i} is no longer a view of the optimizer's flat buffer (p.data replaced, "
                    "the model moved with .to()/.cuda(), or another optimizer took it over): create the optimizer "
                    "once the model is where it trains, and do not replace p.data")

    def _rebind(self, bases: list[int]) -> None:
        """Takes the flat buffers where their storage moved to: the
        addresses a step hands the runtime, and, on the CPU, the runtime's
        own."""
        self._bases = bases
        if (ptrs := self._ptrs()) != self._bound:
            if self._device.type == "cpu":
                self._handle.use_buffers(ptrs, self._n)
            self._bound = ptrs

    def set_dp(self, clip: Union[float, Sequence[float]], noise_multiplier: float, expected_batch_size: int, *,
               proportional_noise: bool = False) -> None:
        """The DP settings of the next steps: per-example clipping norm C,
        noise multiplier σ_DP and (expected) batch size B; the noise per
        coordinate is σ_DP·C/B. ``clip`` as a list, one norm per parameter
        group, clips each example per group (Opacus's per-layer clipping
        with a group a layer): the noise then follows the combined
        sensitivity √Σ C_g², σ_DP·√Σ C_g²/B in every group, or with
        ``proportional_noise`` σ_DP·√G·C_g/B in group g — one Gaussian
        mechanism of multiplier σ_DP either way, so the accountant is
        unchanged; ``privatize`` and ``clip_scales`` then take and give
        scales of shape (G, k). With a process group every rank calls it,
        with the same settings (a difference raises on every rank)."""
        clip, noise_multiplier = _clips(clip), _real(noise_multiplier, "set_dp: noise_multiplier")
        expected_batch_size = _count(expected_batch_size, "set_dp: expected_batch_size")
        self._ranks_agree("set_dp", clip=clip, noise_multiplier=noise_multiplier,
                          expected_batch_size=expected_batch_size, proportional_noise=proportional_noise)
        groups = self._clip_groups(clip, proportional_noise)
        if groups is None:
            self._handle.set_dp(clip, noise_multiplier, expected_batch_size)
        else:
            self._handle.set_dp_groups({"noise_multiplier": noise_multiplier, "batch_size": expected_batch_size,
                                        "proportional_noise": proportional_noise, **groups})
        self._nclip = None
        self._runtime_warnings()

    def _clip_groups(self, clip: Any, proportional_noise: bool) -> Optional[dict]:
        """The runtime's clip groups of a clip norm per parameter group (a
        group's parameters are one range of the flat buffers), or None for
        one norm."""
        if isinstance(clip, numbers.Real):
            if proportional_noise:
                raise ValueError("fibergen: proportional_noise shares the noise among clip groups: "
                                 "give clip as a list, one norm per parameter group")
            return None
        clips = [float(c) for c in clip]
        if bad := [i for i, c in enumerate(clips) if not math.isfinite(c)]:
            raise ValueError(f"fibergen: clipping norm {clips[bad[0]]} of parameter group {bad[0]}: want a finite number > 0")
        if len(clips) != len(self.param_groups):
            raise ValueError(f"fibergen: {len(clips)} clipping norms for {len(self.param_groups)} parameter groups: "
                             "give one per group")
        sizes = [sum(p.numel() for p in pg["params"]) for pg in self.param_groups]
        return {"clip_groups": [{"size": s, "clip_norm": c} for s, c in zip(sizes, clips)]}

    def set_noise(self, sigma_w2: float, draw: bool = True) -> None:
        """Gives the noise variance σ_w² directly (replaying recorded clipped
        means); ``draw=False`` says the gradients are privatized already.
        With a process group every rank calls it, alike."""
        sigma_w2 = _real(sigma_w2, "set_noise: sigma_w2")
        self._ranks_agree("set_noise", sigma_w2=sigma_w2, draw=draw)
        self._handle.set_noise(sigma_w2, draw)
        self._nclip = None
        self._runtime_warnings()

    def set_budget(self, epsilon: float, *, clip: Union[float, Sequence[float]], dataset_size: int, batch_size: int,
                   epochs: float, delta: float = 0.0, sampling: str = "poisson", accountant: str = "pld",
                   proportional_noise: bool = False) -> float:
        """Calibrates σ_DP with fibergen's accountant ("pld", the default, or
        "rdp") so that the run spends at most (ε, δ) (δ = 1/N^1.1 by
        default), sets the DP settings and from then on refuses the steps
        past the schedule; returns σ_DP. ``sampling`` is how the batches
        are drawn: "poisson" (the default), "fixed" (B without replacement,
        afresh each step) or "cyclic" (fixed batches in the same order every
        epoch: ``CyclicBatchSampler``), the only one a correlated-noise
        optimizer (a noise block) takes — its run is one Gaussian mechanism
        with its factorization's sensitivity, no amplification claimed.
        ``clip`` and ``proportional_noise`` are ``set_dp``'s: a list clips
        per parameter group. With a process group every rank calls it,
        alike."""
        clip = _clips(clip)
        req = {"epsilon": _real(epsilon, "set_budget: epsilon"), "delta": _real(delta, "set_budget: delta"),
               "clip": clip, "dataset_size": _count(dataset_size, "set_budget: dataset_size"),
               "batch_size": _count(batch_size, "set_budget: batch_size"), "epochs": _real(epochs, "set_budget: epochs"),
               "sampling": sampling, "accountant": accountant}
        self._ranks_agree("set_budget", proportional_noise=proportional_noise, **req)
        if (groups := self._clip_groups(clip, proportional_noise)) is not None:
            req = {**req, "clip": 0.0, "proportional_noise": proportional_noise, **groups}
        self._apply_hypers()  # a noise filter's hypers set in param_groups are those the accountant is told
        sigma = self._handle.set_budget(req)
        self._nclip = None
        return sigma

    def _scales_shape(self, k: int) -> tuple[int, ...]:
        """The shape of k examples' scales: (k,), or (G, k) under G clip
        groups."""
        if self._nclip is None:
            dp = self._handle.info()["dp"]
            self._nclip = len(dp.get("clip_groups") or ()) if dp else 0
        return (self._nclip, k) if self._nclip else (k,)

    def _ranks_agree(self, what: str, **settings: Any) -> None:
        """With a process group, checks that every rank makes these settings
        (raising on every rank where one differs) before any rank makes
        them: the runtime then accepts or refuses them on all alike."""
        if self._pg is not None:
            _agree(self._pg, what, {k: _plain(v) for k, v in settings.items()}, self._device)

    @property
    def sigma_w2(self) -> Optional[float]:
        """The noise variance per coordinate the DP settings give, σ_w² =
        (σ_DP·sensitivity/B)² (with proportional_noise, group g's is
        (σ_DP·√G·C_g/B)² instead); None without DP settings (before set_dp
        or set_budget, or after set_noise)."""
        dp = self._handle.info()["dp"]
        return None if dp is None else dp["sigma_w2"]

    def spent(self) -> Optional[tuple[float, float]]:
        """The (ε, δ) spent so far under the budget, or None without one.
        Under PLD or cyclic sampling, before the schedule's last step, the ε
        of the next of 100 evenly spaced milestones: an upper bound."""
        s = self._handle.spent()
        if s is None:
            return None
        return (math.inf if s["epsilon"] is None else s["epsilon"]), s["delta"]

    @property
    def noise_mode(self) -> str:
        """The noise mode: "philox" (the default) or "secure" (``secure=True``)."""
        return self._info["noise_mode"]

    @property
    def noise_scheme(self) -> str:
        """The noise mode's scheme and its version, e.g. "philox4x32-10/box-muller-f32/v1"."""
        return self._info["noise_scheme"]

    @property
    def steps(self) -> int:
        """Steps taken: the next step is step ``steps``."""
        return self._handle.info()["steps"]

    def observation(self) -> dict:
        """The next step's observation at the groups' current hypers:
        {"kind": "two_point", "a": A, "lookahead": γ}, or {"kind": "", "a": 0,
        "lookahead": 0} for an optimizer that observes one point (no
        look-ahead gradients to take)."""
        self._sync()
        return self._handle.info()["observation"]

    def attenuations(self) -> dict[str, dict[str, Optional[float]]]:
        """The DP-noise attenuation of each filtered state (those the
        optimizer's step names in attenuation or attenuation_t), as the
        runtime derives it for the optimizer's hypers, the first group's: {state: {"steady":
        A, "finite": A_t after the steps taken}} — the share of σ_w² that
        reaches the state; "finite" is None for a filter that starts from
        another value at step 0 (``state m = g``), whose A_t is not derived."""
        self._sync()
        return {a["state"]: {"steady": a["steady"], "finite": a["finite"]}
                for a in self._handle.info()["attenuations"]}

    def enable_diagnostics(self) -> None:
        """Turns on the clamp_mass diagnostic (an optimizer whose .dsl declares
        ``diagnostic clamp_mass``): after each step the runtime computes the
        share of Σ|m̂| on coordinates whose corrected second moment sits on
        its floor ε_v. Off by default; the step kernel is the same."""
        self._handle.enable_diagnostics()

    def clamp_mass(self) -> list[float]:
        """The clamp_mass of the last step over every parameter group, the
        one value in a list (one value per group before ABI 5; with a
        process group: of this rank's shard)."""
        return [self._handle.clamp_mass()]

    # --- gradients ----------------------------------------------------------

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Zeroes the flat gradient; the parameters' ``.grad`` stay views of it."""
        self._grad.zero_()
        if self._narrow():
            self._pgrad.zero_()
        self._adopt_grads()
        self._grad_invalid = ""

    def _adopt_grads(self) -> None:
        """Puts back into the flat gradient any ``.grad`` that was replaced
        (set to None, or a new tensor) since the layout."""
        grad, size = self._bases[-1], self._pgrad.element_size()
        for p, off in zip(self._params(), self._offs):
            if (g := p.grad) is None or g.data_ptr() != grad + size * off:
                view = self._pgrad[off:off + p.numel()].view_as(p)
                if g is not None:
                    view.copy_(g.reshape(p.shape))
                else:
                    view.zero_()
                p.grad = view

    def _per_example(self, grads: Any, what: str) -> tuple[list[torch.Tensor], int]:
        """Per-example gradients, one tensor [k, *p.shape] per parameter (a
        dict keyed by parameter, a list in the groups' order, or None for
        each parameter's Opacus ``grad_sample``), as a list in the groups'
        order, and k."""
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
            if not isinstance(g, torch.Tensor) or g.device.type == "meta":
                where = f"on the {g.device} device, which holds no values" if isinstance(g, torch.Tensor) else f"a {type(g).__name__}"
                raise TypeError(f"fibergen: privatize: {what} {i} is {where}: want a tensor on the CPU or the parameters' device")
            if g.shape != (k, *p.shape):
                raise ValueError(f"fibergen: privatize: {what} {i} has shape {tuple(g.shape)}, "
                                 f"want {(k, *p.shape)} (examples first)")
        return [g.detach() for g in grads], k

    def _rows(self, grads: list[torch.Tensor], k: int, slot: int = 0) -> torch.Tensor:
        """The per-example gradients grads (of _per_example) as one
        contiguous [k, numel] float32 matrix on the parameters' device."""
        if not k:
            return torch.zeros(0, self.numel, dtype=torch.float32, device=self._device)
        if not all(g.dtype == torch.float32 and g.device == self._device for g in grads):
            rows = torch.cat([g.reshape(k, -1) for g in grads], dim=1)
            return rows.to(dtype=torch.float32, device=self._device).contiguous()
        if len(grads) == 1 and grads[0].is_contiguous():
            return grads[0].reshape(k, -1)  # the rows themselves: no copy
        return torch.cat([g.reshape(k, -1) for g in grads], dim=1, out=self._rows_buffer(slot, k))

    def _in_place(self, *sets: Optional[list[torch.Tensor]]) -> bool:
        """Whether the runtime reads the per-example gradients where they
        are (fg_privatize_segments): on the CPU, every tensor contiguous
        float32 and outside the flat gradient that privatize writes; else
        they are copied into one matrix (_rows)."""
        lo = self._grad.data_ptr()
        hi = lo + 4 * self._grad.numel()
        return self._device.type == "cpu" and all(
            g.dtype == torch.float32 and g.device.type == "cpu" and g.is_contiguous()
            and not (g.data_ptr() < hi and lo < g.data_ptr() + 4 * g.numel())
            for gs in sets if gs is not None for g in gs)

    def _rows_buffer(self, slot: int, k: int) -> torch.Tensor:
        """A [k, numel] matrix for privatize's rows (slot 0 the current
        gradients, 1 the look-ahead ones), the one of the step before where
        it holds k rows: a step allocates none once the batch is as large as
        it gets (which the optimizer then keeps; del it with the optimizer)."""
        buf = self._rows_bufs[slot]
        if buf is None or buf.shape[0] < k:
            buf = torch.empty(k, self.numel, dtype=torch.float32, device=self._device)
            self._rows_bufs[slot] = buf
        return buf[:k]

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
        if self._narrow():
            self._pgrad.copy_(self._grad)  # what .grad shows, rounded to nearest; the step reads the float32 sum
        self._grad_invalid = ""
        self._seen()
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
        self._handle.trust_clipped_gradient()
        self._grad_invalid = ""

    def _privatize(self, grads: Any, lookahead: Any, scales: Optional[torch.Tensor]) -> tuple[torch.Tensor, int]:
        """privatize on this rank's examples, into the flat gradient."""
        self._sync()
        self._adopt_grads()
        cur, k = self._per_example(grads, "per-example gradients")
        look, kl = self._per_example(lookahead, "look-ahead gradients") if lookahead is not None else (None, k)
        if kl != k:
            raise ValueError(f"fibergen: privatize: {kl} look-ahead examples, {k} current ones")
        shape = self._scales_shape(k)
        if scales is not None:
            scales = scales.detach().to(torch.float32).contiguous().cpu()
            if tuple(scales.shape) != shape:
                raise ValueError(f"fibergen: privatize: scales of shape {tuple(scales.shape)} for {k} examples, "
                                 f"want {shape}")
        out_scales = torch.empty(shape, dtype=torch.float32)
        scales_in = scales.data_ptr() if scales is not None else 0
        if self._in_place(cur, look):
            self._segments.set([g.data_ptr() for g in cur], [g.data_ptr() for g in look] if look is not None else None)
            clipped = self._handle.privatize_segments(self._grad.data_ptr(), self.numel, self._segments, k, scales_in,
                                                      out_scales.data_ptr(), out_scales.numel())
            return out_scales, clipped
        cuda = self._device.type == "cuda"
        if cuda and len(shape) > 1:
            return out_scales, self._privatize_groups(cur, look, k, scales_in, out_scales)
        rows, look_rows = self._rows(cur, k), self._rows(look, k, 1) if look is not None else None
        if cuda:
            self._sync_stream()
        clipped = self._handle.privatize(
            self._grad.data_ptr(), self.numel, rows.data_ptr() if k else 0,
            look_rows.data_ptr() if look_rows is not None and k else 0, k, scales_in, out_scales.data_ptr(),
            out_scales.numel(), device=cuda)
        return out_scales, clipped

    def _privatize_groups(self, cur: list[torch.Tensor], look: Optional[list[torch.Tensor]], k: int, scales_in: int,
                          scales_out: torch.Tensor) -> int:
        """privatize on the device under clip groups: each parameter
        group's per-example gradients gathered into a [k, n_g] matrix of
        its own (fg_privatize_device_groups)."""
        def matrices(grads: list[torch.Tensor]) -> list[torch.Tensor]:
            out, at = [], 0
            for pg in self.param_groups:
                part, at = grads[at:at + len(pg["params"])], at + len(pg["params"])
                rows = torch.cat([g.reshape(k, -1) for g in part], dim=1) if k else torch.zeros(0, device=self._device)
                out.append(rows.to(dtype=torch.float32, device=self._device).contiguous())
            return out
        curs, looks = matrices(cur), matrices(look) if look is not None else None
        self._sync_stream()
        addr = lambda ms: [m.data_ptr() if k else 0 for m in ms]  # noqa: E731
        return self._handle.privatize_device_groups(self._grad.data_ptr(), self.numel, addr(curs),
                                                    addr(looks) if looks is not None else None, k, scales_in,
                                                    scales_out.data_ptr(), scales_out.numel())

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
        ``.grad``; or pass the scales to ``privatize``. Under clip groups
        (``set_dp`` with a list) every argument and the scales are (G, k):
        each example's norms in each group, clipped to the group's norm."""
        self._sync()
        f64 = lambda t: None if t is None else t.detach().to(torch.float64).contiguous().cpu()  # noqa: E731
        cur, look, dot = f64(cur_norms), f64(look_norms), f64(dots)
        shape = self._scales_shape(cur.shape[-1] if cur.dim() else -1)
        for name, t in (("cur_norms", cur), ("look_norms", look), ("dots", dot)):
            if t is not None and tuple(t.shape) != shape:
                raise ValueError(f"fibergen: clip_scales: {name} has shape {tuple(t.shape)}, want {shape}: "
                                 "one value per example" + (" and clip group" if len(shape) > 1 else ""))
        out = torch.empty(shape, dtype=torch.float32)
        self._handle.clip_scales(look.data_ptr() if look is not None else 0, cur.data_ptr(),
                                           dot.data_ptr() if dot is not None else 0, out.numel(), out.data_ptr())
        return out

    @contextlib.contextmanager
    def lookahead(self) -> Iterator[None]:
        """Puts the parameters at the look-ahead point of the next step,
        θ_t + γ·(θ_t − θ_{t−1}), for the second gradient of a two_point
        optimizer, and back on exit; ``step`` is refused inside."""
        self._sync()
        b = self._lookahead_buffer()
        if b == -1:
            raise FibergenError(f"fibergen: {self._info['name']} has no two_point observation, so no look-ahead point")
        with self._theta_at(b, "opt.lookahead()", "the look-ahead point"):  # θ_0 itself before the first step
            yield

    @contextlib.contextmanager
    def at_state(self, name: str) -> Iterator[None]:
        """Puts the parameters at the state ``name`` — Schedule-Free's average
        ``x``, an EMA of the weights — to evaluate the model there, and back,
        bit for bit, on exit; ``step`` is refused inside. A state that starts
        from theta is theta before the first step; one that starts from
        another value (g) has none the binding can give until then. With a
        ``process_group`` every rank enters the block, as for ``lookahead``:
        the parameters are gathered."""
        if name in [s["name"] for s in self._info["line_states"]]:
            raise ValueError(f"fibergen: {name} is a state per row or per column of {self._info['name']}, not a point the "
                             "parameters can be put at: at_state takes a state per coordinate")
        if name not in self._states:
            raise ValueError(f"fibergen: {self._info['name']} has no state {name!r} (its states: {', '.join(self._states)})")
        if name in self._info["noise_buffers"]:
            raise ValueError(f"fibergen: {name} is a noise buffer of {self._info['name']}: it holds past noise, which with the "
                             "outputs would reveal the gradients, so the optimizer never shows it")
        if name == "lookahead":
            raise ValueError("fibergen: the look-ahead point is θ_0 before the first step, not its buffer: use 'with opt.lookahead()'")
        self._sync()
        b, start = _abi.FIRST_STATE + self._states.index(name), self._info["starts"].get(name)
        if start and self.steps == 0:
            if start != "theta":
                raise FibergenError(f"fibergen: state {name} starts from `{start}` at the first step; before it the "
                                    "binding gives only a start from theta itself")
            b = _abi.THETA_BUFFER
        with self._theta_at(b, f"opt.at_state({name!r})", f"state {name}"):
            yield

    @contextlib.contextmanager
    def _theta_at(self, b: int, block: str, what: str) -> Iterator[None]:
        """Copies buffer b (a state's; theta itself: nothing) into the
        parameters, and θ back on exit; ``step`` inside raises, naming
        block and what the parameters are there."""
        saved = None
        if b != _abi.THETA_BUFFER:
            if self._saved_theta is None or self._in_block:  # a block inside another keeps its own copy
                self._saved_theta = torch.empty_like(self._theta)
            saved = self._saved_theta
            with torch.no_grad():
                saved.copy_(self._theta)
                self._theta[self._lo:self._lo + self._n].copy_(self._state_bufs[b - _abi.FIRST_STATE])
                self._gather()
        outer, self._in_block = self._in_block, (block, what)
        try:
            yield
        finally:
            self._in_block = outer
            if saved is not None:
                with torch.no_grad():
                    self._theta.copy_(saved)

    def _lookahead_buffer(self) -> int:
        """The buffer that holds the look-ahead point (fg_info's
        lookahead_buffer): theta before the first step, a state after it,
        which stays that state (the steps only go on), so it is asked for
        until then only."""
        if self._lookahead_at is not None:
            return self._lookahead_at
        b = self._handle.info()["lookahead_buffer"]
        if b != _abi.THETA_BUFFER:
            self._lookahead_at = b
        return b

    # --- the step -------------------------------------------------------------

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        """One step on the gradient in ``.grad`` (privatized by ``privatize``,
        or the clipped mean the trainer wrote), adding the DP noise in the
        kernel. A NaN or ±Inf gradient entry skips the step — parameters,
        states, step counter and noise position unchanged — sets
        ``found_inf`` and warns, as torch.cuda.amp.GradScaler skips."""
        if self._in_block:
            block, what = self._in_block
            raise FibergenError(f"fibergen: step inside 'with {block}': the parameters there are {what}, "
                                "not θ_t; step after the block")
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
        if not self._step_all():
            return self._skip(loss)
        self.found_inf = False
        self._gather()
        if self._clamp_watch:
            self._runtime_warnings(stacklevel=5)  # past no_grad and torch's step hook
        return loss

    def _runtime_warnings(self, stacklevel: int = 3) -> None:
        """Warns the runtime's warnings given since the last call: the clamp
        warning after a step, the settings' (noise that draws nothing) after
        they are made."""
        for w in self._handle.warnings():
            warnings.warn(f"fibergen: {w}", RuntimeWarning, stacklevel=stacklevel)

    def _note_writes(self, agree: bool = True) -> None:
        """Tells the runtime that the flat gradient was written since
        privatize, trust_clipped_grad or the last step — by a backward pass
        into the ``.grad`` views, a copy, anything but privatize — which
        torch's version counter of the buffer (shared by its views) shows:
        the runtime then releases it only where no DP settings ask for a
        privatized one. With a process group and ``agree``, a write on any
        rank counts on every rank, so that all step or none."""
        written = int(self._written())
        if self._narrow() and written:
            with torch.no_grad():
                self._grad.copy_(self._pgrad)  # exactly: every bfloat16 and float16 is a float32
        if self._max_over_ranks(written) if agree else written:
            self._handle.gradient_written()
        self._seen()

    # The positions _seen samples: a write that changes a fraction f of the
    # gradient escapes all of them with probability (1 - f)^256.
    _PROBES = 256

    def _seen(self) -> None:
        """Remembers the flat gradient as the runtime last heard of it:
        torch's version counter of the buffer (its views share it), and its
        bits at _PROBES positions drawn afresh, which a write through an
        alias that bumps no version (``p.grad.data``, a NumPy view) changes
        too."""
        self._grad_seen = self._pgrad._version
        n = self._pgrad.numel()
        idx = torch.randint(max(n, 1), (min(self._PROBES, n),), generator=self._probe_gen, device=self._pgrad.device)
        self._probe = (idx, _bits(self._pgrad[idx]).clone())

    def _written(self) -> bool:
        """Whether the flat gradient was written since _seen: a new version,
        or other bits at a probed position."""
        idx, bits = self._probe
        return self._pgrad._version != self._grad_seen or not torch.equal(_bits(self._pgrad[idx]), bits)

    def _step_all(self) -> bool:
        """Steps every group, returning False where the gradient is not
        finite (and raising where the runtime refuses to release it): one
        runtime step, which checks the gradient before it changes anything.
        With a process group every rank's gradient is checked first, so that
        all ranks step or none."""
        if self._pg is not None:
            if self._found_inf():
                return False
            self._step_once()  # checked: a NonFiniteGradient here is a bug, and raises
            return True
        try:
            self._step_once()
        except NonFiniteGradient as e:
            self.last_nonfinite = self._locate(e, self._lo + e.index)
            return False
        return True

    def _step_once(self) -> None:
        if self._device.type == "cuda":
            self._handle.step_device(self._bound, self._n, self._lo)  # _sync refused moved parameters
        else:
            self._handle.step()
            self._read_lines()

    def _skip(self, loss: Any) -> Any:
        """Reports a step skipped for a non-finite gradient."""
        self.found_inf = True
        self.skipped_steps += 1
        warnings.warn(f"fibergen: step skipped: {self.last_nonfinite}", RuntimeWarning, stacklevel=4)
        return loss

    def _found_inf(self) -> bool:
        """Checks every rank's gradient before any rank steps, so that a
        step is all or nothing: True where one is not finite; a refusal to
        release it (stepped on already, not privatized) raises on every
        rank."""
        refused: Optional[FibergenError] = None
        try:
            if self._device.type == "cuda":
                self._handle.check_device_gradient(self._grad[self._lo:].data_ptr() if self._n else 0, self._n)
            else:
                self._handle.check_gradient()
        except NonFiniteGradient as e:
            self.last_nonfinite = self._locate(e, self._lo + e.index)
        except FibergenError as e:
            refused = e
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
        """All-gathers the ranks' slices of the parameters, as their bytes
        (gloo moves no bfloat16)."""
        if self._pg is None:
            return
        theta, size = self._theta.view(torch.uint8), self._theta.element_size()
        if bounds := self._shard.get("bounds"):  # shards of unequal length, which all_gather refuses
            for r, src in enumerate(self._sources):
                if bounds[r + 1] > bounds[r]:
                    dist.broadcast(theta[size * bounds[r]:size * bounds[r + 1]], src=src, group=self._pg)
            return
        parts = list(theta.split(size * self._slice))
        mine = parts[self._rank].clone()
        dist.all_gather(parts, mine, group=self._pg)

    # --- checkpoints ------------------------------------------------------------

    def _shapes(self) -> list[list[list[int]]]:
        return [[list(p.shape) for p in pg["params"]] for pg in self.param_groups]

    def state_dict(self) -> dict:
        """The optimizer's state: the runtime's checkpoint (step, seed,
        hypers — every group's —, DP settings, privacy budget, build hash,
        the groups' layout and the SHA-256 of the states beside it — as a
        uint8 tensor, in each group's entry; keep it as private as the data,
        since the seed undoes the noise) and per group this rank's part of
        each state; the param groups (every key but the parameters, which
        are indices); the layout."""
        self._sync()  # the checkpoint holds the hypers the groups hold now
        host = _host(self._state_bufs)  # alive through the call that reads it
        blob = self._handle.save(_addrs(host), self._n)
        state = {}
        for i, g in enumerate(self._groups):
            state[i] = {"checkpoint": torch.frombuffer(bytearray(blob), dtype=torch.uint8), "slice": [g.lo, g.hi],
                        **{name: s.detach().clone() for name, s in zip(self._states, g.states)}}
        groups, idx = [], 0
        for pg in self.param_groups:
            k = len(pg["params"])
            groups.append({**{h: v for h, v in pg.items() if h != "params"}, "params": list(range(idx, idx + k))})
            idx += k
        return {"state": state, "param_groups": groups,
                "fibergen": {"format": _STATE_DICT_FORMAT, "optimizer": self._info["name"],
                             "manifest_sha256": self._info["manifest_sha256"], "shapes": self._shapes(),
                             "world_size": self._world, "rank": self._rank, "noise_mode": self.noise_mode,
                             "given": [sorted(pg.given) for pg in self.param_groups]}}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restores a state_dict of this optimizer's build and layout into an
        optimizer that has not stepped (resuming is then bit for bit the run
        that saved it, and never replays noise; in secure mode the
        parameters and states are, and the noise is new: the state holds no
        key, and the runtime derives the resumed run's from this optimizer's,
        alike on every rank). The state_dict is checked —
        its format, optimizer, noise mode, layout, the states' dtypes, shapes and
        finiteness, that every group holds the one checkpoint, then the
        checkpoint by the runtime, the states against the digest it holds,
        and that it was not resumed before (anywhere on this machine: a copy
        of the file, another process) — before anything changes; a
        mismatched, damaged or resumed one raises. ``allow_resume_again``
        resumes a state resumed before, with a warning. A state_dict of
        format fibergen-torch-1 (before ABI 5) loads where there is one
        parameter group."""
        blob, states = self._check_state_dict(state_dict)
        info = self._handle.checkpoint_info(blob)
        self._warn_of(info)
        flat = [torch.cat(parts) for parts in zip(*states)]  # each state over the shard, as the digest covers it
        host = _host(flat) if info["states_digest"] else []  # the states the digest covers, alive until loaded
        self._handle.load(blob, _addrs(host), self._n)
        self._nclip = None  # the checkpoint's DP settings
        self._runtime_warnings()
        with torch.no_grad():
            for dst, src in zip(self._state_bufs, flat):
                dst.copy_(src)
        self._restore_hypers(state_dict["param_groups"], state_dict["fibergen"].get("given"))
        self._read_lines()

    def _restore_hypers(self, saved: list[dict], given: Optional[list[list[str]]]) -> None:
        """Sets the param groups from a loaded state_dict's and the hypers
        the runtime restored from its checkpoint: group 0's the optimizer's,
        the others' their ranges'; and which of them were given (the
        others the runtime derives), where the state_dict says (every one,
        in a state_dict saved before it did)."""
        for i, (pg, sv) in enumerate(zip(self.param_groups, saved)):
            pg.update({k: v for k, v in sv.items() if k != "params"})
            pg.given = set(given[i]) if given else set(self._names.hypers)
            pg.written = set()  # the runtime restored them from its checkpoint, with which it derives
        self._sent = set(self.param_groups[0].given)
        self._refresh_hypers()
        for g, pg in zip(self._groups, self.param_groups):
            pg.show(g.applied)  # the runtime's values, the given ones too

    def _warn_of(self, info: dict) -> None:
        """Warns of a checkpoint saved before it held the states' digest (its
        states then load unchecked) and of one resumed before, which only
        ``allow_resume_again`` lets through."""
        if not info["states_digest"] and self._states:  # an optimizer without states has none to digest
            warnings.warn("fibergen: this state_dict predates the digest of the states (fibergen before ABI 4): its "
                          "states load unchecked; save it again to have them checked", RuntimeWarning, stacklevel=3)
        if info["resumed"] and self._opts["allow_resume_again"]:
            warnings.warn(f"fibergen: this state was resumed before ({info['resumed']}): resuming it again draws the "
                          "noise of the steps after it again, on other gradients", RuntimeWarning, stacklevel=3)

    def _check_state_dict(self, sd: Any) -> tuple[bytes, list[list[torch.Tensor]]]:
        """The checks of load_state_dict that need no runtime but the
        checkpoint's summary: the format, the optimizer, the layout, the
        states, one checkpoint in every group; its checkpoint and each
        group's states."""
        def bad(msg: str) -> FibergenError:
            return FibergenError(f"fibergen: load_state_dict: {msg}")
        fmt = sd["fibergen"].get("format") if isinstance(sd, dict) and isinstance(sd.get("fibergen"), dict) else None
        if fmt == _FORMAT_ONE_GROUP and len(self._groups) > 1:
            raise bad(f"a state_dict of format {fmt} (fibergen before ABI 5, a runtime optimizer per parameter group) "
                      f"with {len(self._groups)} groups: this binding steps every group with one runtime optimizer and "
                      "cannot resume it; finish that run with the fibergen that saved it (docs/python.md)")
        if fmt not in (_STATE_DICT_FORMAT, _FORMAT_ONE_GROUP):
            raise bad(f"not a state_dict of a fibergen optimizer (format {_STATE_DICT_FORMAT})")
        meta = sd["fibergen"]
        if meta.get("optimizer") != self._info["name"]:
            raise bad(f"state of {meta.get('optimizer')!r}, this optimizer is {self._info['name']!r}")
        if (mode := meta.get("noise_mode", "philox")) != self.noise_mode:
            raise bad(f"a state of a run in {mode!r} noise mode, this optimizer draws in {self.noise_mode!r} mode: a run "
                      f"resumes in the noise mode it drew in (pass secure={mode == 'secure'} to the Optimizer)")
        if meta.get("shapes") != self._shapes():
            raise bad(f"the parameter groups differ from the state_dict's: {_shapes_differ(meta.get('shapes'), self._shapes())}")
        if (meta.get("world_size"), meta.get("rank")) != (self._world, self._rank):
            raise bad(f"state of rank {meta.get('rank')} of {meta.get('world_size')}, "
                      f"this is rank {self._rank} of {self._world}")
        if not isinstance(sd.get("param_groups"), list) or len(sd["param_groups"]) != len(self._groups):
            raise bad("its param_groups do not match the optimizer's")
        given = meta.get("given")
        if given is not None and not (isinstance(given, list) and len(given) == len(self._groups) and all(
                isinstance(g, list) and all(isinstance(h, str) and h in self._names.hypers for h in g) for g in given)):
            raise bad(f"its given hypers {_short(given)} are not a list of this optimizer's hyper names per group")
        groups = [self._check_group(i, g, sd.get("state", {}).get(i), bad) for i, g in enumerate(self._groups)]
        blobs = [blob for blob, _ in groups]
        if any(b != blobs[0] for b in blobs):
            infos = [self._handle.checkpoint_info(b) for b in blobs]
            if len({(i["step"], i["seed"]) for i in infos}) > 1:
                raise bad(f"the groups' checkpoints are of different runs or steps (steps {[i['step'] for i in infos]}): "
                          "a state_dict holds one run at one step")
            raise bad("the groups' checkpoints differ: a state_dict holds one checkpoint, the same in every group")
        return blobs[0], [states for _, states in groups]

    def _check_group(self, i: int, g: _Group, st: Any, bad: Any) -> tuple[bytes, list[torch.Tensor]]:
        """Group i's checkpoint and states from a state_dict, checked."""
        blob = st.get("checkpoint") if isinstance(st, dict) else None
        if not (isinstance(blob, torch.Tensor) and blob.dtype == torch.uint8 and blob.dim() == 1):
            raise bad(f"group {i} has no checkpoint (a uint8 tensor)")
        if st.get("slice") != [g.lo, g.hi]:
            raise bad(f"group {i} holds coordinates {st.get('slice')}, this rank's are {[g.lo, g.hi]}")
        states = []
        for k, name in enumerate(self._states):
            t, dtype = st.get(name), _DTYPES[self._info["dtypes"][_abi.FIRST_STATE + k]]
            if not isinstance(t, torch.Tensor) or t.dtype != dtype or tuple(t.shape) != (g.n,):
                raise bad(f"group {i}: state {name} should be a {str(dtype).removeprefix('torch.')} tensor of {g.n} values, got "
                          f"{type(t).__name__} {getattr(t, 'dtype', '')} {tuple(getattr(t, 'shape', ()))}")
            if not bool(torch.isfinite(t).all()):
                raise bad(f"group {i}: state {name} holds a NaN or ±Inf")
            states.append(t)
        return blob.cpu().numpy().tobytes(), states

    def close(self) -> None:
        """Releases the runtime optimizer (the kernels, device resources)."""
        if (h := getattr(self, "_handle", None)) is not None:
            h.close()


# The buffers' storage types (fg_info's dtypes) as torch's.
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# The parameters' dtypes as fg_resolve's params names them.
_PARAM_STORAGE = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}


def _param_storage(params: list[Any], rounding: str) -> str:
    """fg_resolve's params for the parameters (tensors, or groups of them):
    their one dtype, then " stochastic" where rounding asks for it; raises
    on a dtype the kernels do not store and on mixed dtypes."""
    if rounding not in ("nearest", "stochastic"):
        raise ValueError(f"fibergen: param_rounding = {rounding!r}: want 'nearest' or 'stochastic'")
    tensors = [p for g in params for p in (_group_params(g) if isinstance(g, dict) else [g])]
    dtypes = {p.dtype for p in tensors if isinstance(p, torch.Tensor)}
    if bad := sorted(str(d) for d in dtypes if d not in _PARAM_STORAGE):
        raise FibergenError(f"fibergen: parameters of dtype {', '.join(bad)}: the kernels store float32, "
                            "bfloat16 or float16 parameters (convert the model with .float() or .bfloat16())")
    if len(dtypes) > 1:
        first = next(i for i, p in enumerate(tensors) if p.dtype != tensors[0].dtype)
        raise FibergenError(f"fibergen: parameter 0 is {tensors[0].dtype}, parameter {first} {tensors[first].dtype}: "
                            "one optimizer's parameters share one dtype, which its kernels are compiled for: "
                            "convert the model to one (model.bfloat16(), or model.float()); two optimizers would "
                            "clip and noise each example twice")
    storage = _PARAM_STORAGE[dtypes.pop()] if dtypes else "f32"
    if rounding == "stochastic":
        if storage == "f32":
            raise ValueError("fibergen: param_rounding='stochastic' with float32 parameters, whose stores round "
                             "nothing: it applies to bfloat16 and float16 ones")
        storage += " stochastic"
    return storage


def _shapes_differ(saved: Any, mine: list[list[list[int]]]) -> str:
    """The first difference between a state_dict's parameter shapes (per
    group) and the optimizer's: a group's count or a parameter's shape."""
    if not isinstance(saved, list) or len(saved) != len(mine):
        return f"{len(mine)} parameter groups here, the state_dict's {_short(saved)}"
    for i, (theirs, ours) in enumerate(zip(saved, mine)):
        if not isinstance(theirs, list) or len(theirs) != len(ours):
            return f"param_groups[{i}] holds {len(ours)} parameters here, the state_dict's {_short(theirs)}"
        for j, (a, b) in enumerate(zip(theirs, ours)):
            if a != b:
                return f'param_groups[{i}]["params"][{j}] has shape {b} here, {a} in the state_dict'
    return "they differ"


def _group_params(group: dict) -> list[Any]:
    """A param group's parameters, as torch takes them (one tensor or an
    iterable; a generator is consumed, so the list replaces it), a set
    refused as torch refuses it: its order, which lays out the flat
    buffers, changes between runs."""
    ps = group.get("params", [])
    if isinstance(ps, set):
        raise TypeError("fibergen: optimizer parameters need to be organized in ordered collections, but the ordering "
                        "of tensors in sets will change between runs: use a list")
    group["params"] = ps = [ps] if isinstance(ps, torch.Tensor) else list(ps)
    return ps


def _bits(x: torch.Tensor) -> torch.Tensor:
    """x's bits as integers of its width, which compare a NaN as equal to
    itself and -0 as other than 0."""
    return x.view(torch.int32 if x.element_size() == 4 else torch.int16)


def _host(states: list[torch.Tensor]) -> list[torch.Tensor]:
    """The states as contiguous float32 host memory, for the runtime's
    digest (on the host, the states themselves)."""
    return [s.detach().to("cpu", torch.float32).contiguous() for s in states]


def _addrs(tensors: list[torch.Tensor]) -> list[int]:
    return [t.data_ptr() for t in tensors]


def _agree(pg: Any, what: str, facts: dict[str, Any], device: Optional[torch.device] = None,
           **extra: Any) -> list[dict[str, Any]]:
    """Every rank's {"facts": facts, **extra}, once every rank of pg holds
    rank 0's facts: one all_gather_object, a collective of one protocol
    whatever the facts, so that no difference can leave the ranks waiting
    in different collectives (on a CUDA device, the parameters', which
    NCCL's all_gather_object takes for the current one). A rank whose
    facts differ, or that failed before (its facts are {"error": ...}),
    raises on every rank a FibergenError naming the rank and the fact."""
    every: list[Any] = [None] * dist.get_world_size(pg)
    with torch.cuda.device(device) if device is not None and device.type == "cuda" else contextlib.nullcontext():
        dist.all_gather_object(every, {"facts": facts, **extra}, group=pg)
    if differences := _differences([e["facts"] for e in every]):
        shown = "; ".join(differences[:_SHOWN_DIFFERENCES]) + (
            f"; and {len(differences) - _SHOWN_DIFFERENCES} more" if len(differences) > _SHOWN_DIFFERENCES else "")
        raise FibergenError(f"fibergen: the ranks cannot {what} together: {shown}")
    return every


_SHOWN_DIFFERENCES = 6  # the differences an error names; it counts the rest


def _differences(facts: list[dict[str, Any]]) -> list[str]:
    """Where each rank's facts differ from rank 0's (a failed rank's error
    first), in words."""
    failed = [f"rank {r} failed: {f['error']}" for r, f in enumerate(facts) if "error" in f]
    if failed:
        return failed
    out = []
    for key in dict.fromkeys(k for f in facts for k in f):  # rank 0's order, then what only others have
        ours = facts[0].get(key, _ABSENT)
        out += [_difference(key, r, f.get(key, _ABSENT), ours) for r, f in enumerate(facts)
                if r and f.get(key, _ABSENT) != ours]
    return out


class _Absent:
    """A fact some rank does not have (its groups are fewer)."""

    def __repr__(self) -> str:
        return "absent"


_ABSENT = _Absent()


def _difference(key: str, rank: int, theirs: Any, ours: Any) -> str:
    """Rank rank's fact key against rank 0's, in words; a seed's value is
    not shown (it is secret: it undoes the noise)."""
    if key == "seed":
        if theirs is not None and ours is not None:
            return f"rank {rank}'s seed differs from rank 0's (neither is shown: a seed is secret)"
        seen = {None: "None (rank 0 draws it)"}
        return (f"rank {rank}'s seed is {seen.get(theirs, 'a fixed one')}, rank 0's is {seen.get(ours, 'a fixed one')}:"
                " pass the same seed= on every rank, or none on any")
    return f"rank {rank}'s {key} is {_short(theirs)}, rank 0's is {_short(ours)}"


def _short(v: Any, limit: int = 120) -> str:
    s = repr(v)
    return s if len(s) <= limit else s[:limit - 3] + "..."


def _real(x: Any, what: str) -> float:
    """x as a float, where it is a real number (a one-element tensor
    included); a bool, a string or anything else raises, naming what x is."""
    if isinstance(x, torch.Tensor) and x.numel() == 1 and x.dtype != torch.bool:
        return float(x)
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"fibergen: {what} = {x!r}: want a real number")
    return float(x)


def _count(x: Any, what: str) -> int:
    """x as an int, where it is a whole number from 1 to 2^53 (a
    one-element integer tensor included); anything else raises, naming what
    x is."""
    if isinstance(x, torch.Tensor) and x.numel() == 1 and not x.is_floating_point() and x.dtype != torch.bool:
        x = int(x)
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"fibergen: {what} = {x!r}: want a whole number")
    if not 1 <= x <= 2**53:
        raise ValueError(f"fibergen: {what} = {x}: want 1 to 2^53")
    return int(x)


def _clips(clip: Any) -> Union[float, list[float]]:
    """set_dp's clip as floats: one norm (a real number, a 0-d tensor or
    array), or an iterable of one per parameter group (a list, a 1-D
    tensor or array)."""
    if isinstance(clip, numbers.Real) or getattr(clip, "ndim", None) == 0:
        return _real(clip if isinstance(clip, (numbers.Real, torch.Tensor)) else clip[()], "clip")  # a 0-d array's scalar
    try:
        if isinstance(clip, (str, bytes)) or getattr(clip, "ndim", 1) != 1:
            raise TypeError
        clips = list(clip)
    except TypeError:
        raise TypeError(f"fibergen: clip = {clip!r}: want a real number, or one per parameter group") from None
    return [_real(c, f"clip of parameter group {i}") for i, c in enumerate(clips)]


def _plain(v: Any) -> Any:
    """A hyper's value as comparable, picklable plain data: a number as
    itself (1 and 1.0 compare equal), a sequence as a list, anything else
    as its repr."""
    if v is None or isinstance(v, (bool, str, int, float)):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, torch.Tensor) and v.numel() == 1:
        return v.item()
    return repr(v)


class CyclicBatchSampler(torch.utils.data.Sampler[list[int]]):
    """The batches of ``set_budget(..., sampling="cyclic")``: the indices
    0..dataset_size-1 shuffled once by ``generator`` and cut into batches
    of batch_size (the last may be short), which every epoch — every
    iteration over the sampler — yields in the same order, so that an
    example is in one batch of every ``len(sampler)`` steps, as the
    accountant is told. Use it as a DataLoader's ``batch_sampler``. With a
    process group every rank builds it alike (the same generator seed) and
    takes its share of each batch: the batches are global."""

    def __init__(self, dataset_size: int, batch_size: int, generator: Optional[torch.Generator] = None):
        if not 1 <= batch_size <= dataset_size:
            raise ValueError(f"batch_size {batch_size}: want 1 to the dataset_size {dataset_size}")
        order = torch.randperm(dataset_size, generator=generator).tolist()
        self._batches = [order[i:i + batch_size] for i in range(0, dataset_size, batch_size)]

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self._batches)

    def __len__(self) -> int:
        return len(self._batches)


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
