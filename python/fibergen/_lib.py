"""The C ABI of libfibergen.so (Go package capi), loaded with ctypes.

Everything the binding knows about an optimizer's host side comes through
here: this module declares the functions' signatures, turns their statuses
into exceptions and wraps an optimizer handle. It does no arithmetic of its
own, and holds no fact of the ABI: the version, the statuses, the buffers'
positions and the signatures are those of _abi.py, which capi/internal/genpy
generates from capi's and ir's Go source.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Optional, Sequence

from . import _abi

ABI_VERSION = _abi.ABI_VERSION
_ERRLEN = 2048

c_float_p = ctypes.POINTER(ctypes.c_float)
c_double_p = ctypes.POINTER(ctypes.c_double)


class FibergenError(RuntimeError):
    """An error the runtime reported: bad hypers, settings, files, states."""


class NonFiniteGradient(FibergenError):
    """A gradient entry is NaN or ±Inf: the step was skipped, nothing changed."""

    def __init__(self, message: str, index: int, value: float, param: int = -1, param_index: int = -1):
        super().__init__(message)
        self.index, self.value = index, value  # in the flat gradient
        self.param, self.param_index = param, param_index  # which parameter, and where in it


class NonFiniteExample(FibergenError):
    """A per-example gradient is not finite: privatization changed nothing."""

    def __init__(self, message: str, example: int):
        super().__init__(message)
        self.example = example


_lib: Optional[ctypes.CDLL] = None
_pid = 0  # the process that loaded the library: the Go runtime in it does not survive fork


def library_path() -> Path:
    """Where libfibergen.so is: $FIBERGEN_LIB, else next to this file."""
    return Path(os.environ.get("FIBERGEN_LIB") or Path(__file__).with_name("libfibergen.so"))


def lib() -> ctypes.CDLL:
    """The loaded library, its signatures declared and its ABI checked."""
    global _lib, _pid
    if _lib is not None:
        if os.getpid() != _pid:
            raise FibergenError("fibergen: this process was forked from the one that loaded libfibergen.so, and the Go "
                                "runtime inside does not survive fork: start workers with the 'spawn' start method")
        return _lib
    path = library_path()
    if not path.exists():
        raise FibergenError(f"fibergen: {path} is missing: build it with 'make python-lib' in the fibergen clone "
                            "(go build -buildmode=c-shared ./capi), or point FIBERGEN_LIB at it")
    cdll = ctypes.CDLL(str(path))
    version = cdll.fg_abi_version  # the one function every version has, as it was
    version.argtypes, version.restype = [], ctypes.c_int
    if (v := version()) != ABI_VERSION:
        raise FibergenError(f"fibergen: {path} has ABI version {v}, this binding needs {ABI_VERSION}: rebuild it "
                            "(make python-lib)")
    for name, (restype, args) in _abi.SIGNATURES.items():
        f = getattr(cdll, name)
        f.argtypes, f.restype = list(args), restype
    _lib, _pid = cdll, os.getpid()
    return cdll


# What the runtime's messages name in Go (runtime.Options, the Optimizer's
# methods, its backends), as a Python user does it: the one place that
# knows both names. The runtime's messages keep their Go names for Go
# callers (its tests hold them), and the binding's users read these. The
# longest phrases first, as some hold shorter ones;
# python/tests/test_names.py checks that every message a Python user can
# meet reads without a Go name.
PYTHON_ADVICE = tuple((re.compile(pattern), advice) for pattern, advice in (
    # options
    (r", or open it with Backend Go, the reference \(Options\.GoFallback [^)]*\)", ""),
    (r"Options\.AllowResumeAgain \(allow_resume_again in PyTorch\)", "allow_resume_again=True"),
    (r" \(Options\.StateDir\)", ""),
    (r"\(Options\.AllowExtrapolation\)", "(pass allow_extrapolation=True to the Optimizer to go on)"),
    (r"Options\.AllowResumeAgain", "allow_resume_again=True"),
    (r"Options\.AllowUnstable", "allow_unstable=True"),
    (r"Options\.AllowGradientReuse", "allow_gradient_reuse=True"),
    (r"Options\.NoClampWarning turns this warning off", "clamp_warning=False turns this warning off"),
    (r"DP\.BatchSize", "expected_batch_size"),
    (r"open it with Options\.SecureNoise", "pass secure=True to the Optimizer"),
    (r"open it without Options\.SecureNoise", "pass secure=False to the Optimizer"),
    (r"open with Options\.SecureNoise", "pass secure=True"),
    (r"Options\.SecureNoise", "secure=True"),
    # the noise and the budget
    (r"\(SetDP\)", "(set_dp)"),
    (r"\(SetNoise\)", "(set_noise)"),
    (r"\(SetBudget\)", "(set_budget)"),
    (r"SetNoise would bypass it", "set_noise would bypass it"),
    # the gradient's release
    (r"^runtime: Step: ", "runtime: step: "),
    (r"^runtime: TrustClippedGradient: ", "runtime: trust_clipped_grad: "),
    (r"written outside Privatize \(SetGrad, or a write into the trainer's buffer such as a backward pass\)",
     "written outside Privatize (that is, not by privatize(): by a backward pass or another write into .grad)"),
    (r"Privatize the per-example gradients", "privatize() the per-example gradients"),
    (r"TrustClippedGradient \(trust_clipped_grad\(\) in PyTorch\)", "trust_clipped_grad()"),
    (r"privatize the next batch \(Privatize\) or set it", "privatize the next batch (privatize()) or write it"),
    (r"write one first \(GradientWritten marks it\)", "write one into .grad first"),
    # privatize and clip_scales
    (r"before (?:Privatize|PrivatizeDevice):", "before privatize():"),
    (r"before ClipScales:", "before clip_scales():"),
    (r"^runtime: Privatize divides", "runtime: privatize() divides"),
    (r"^runtime: PrivatizeDevice: ", "runtime: privatize(): "),
    (r"pass look = nil", "give privatize() no lookahead gradients"),
    (r"ClipScales takes lookNorm and dot together", "clip_scales() takes look_norms and dots together"),
    (r"pass lookNorm = dot = nil", "give clip_scales() no look_norms or dots"),
    (r"so pass lookNorm and dot too", "so give clip_scales() look_norms and dots too"),
    (r"not those ClipScales returned last", "not those clip_scales() returned last"),
    # per-group clipping
    (r"DP\.ProportionalNoise shares the noise among clip groups: set DP\.Groups",
     "proportional_noise shares the noise among clip groups: give clip as a list"),
    # diagnostics, checkpoints
    (r"\(EnableDiagnostics\)", "(enable_diagnostics())"),
    (r"since EnableDiagnostics", "since enable_diagnostics()"),
    (r"\(Steps\(\) = ", "(steps() = "),
    (r"load a checkpoint \(Load\)", "load a checkpoint (load_state_dict)"),
))


def pythonic(msg: str) -> str:
    """The runtime's message with the Go options and methods it names as
    the keyword arguments a Python user passes and the methods it calls."""
    for pattern, advice in PYTHON_ADVICE:
        msg = pattern.sub(advice, msg)
    return msg


def call(name: str, *args: Any, index: Optional[ctypes.c_int64] = None,
         value: Optional[ctypes.c_float] = None, err: Optional[Any] = None) -> None:
    """Calls fg_<name> with args and an error buffer (err, else a new one);
    raises on a status."""
    if err is None:
        err = ctypes.create_string_buffer(_ERRLEN)
    f = getattr(lib(), "fg_" + name)
    status = f(*args, err, _ERRLEN)
    if status == _abi.OK:
        return
    msg = pythonic(err.value.decode("utf-8", "replace"))
    if status == _abi.NONFINITE:
        raise NonFiniteGradient(msg, index.value if index else -1, value.value if value else float("nan"))
    if status == _abi.BAD_EXAMPLE:
        raise NonFiniteExample(msg, index.value if index else -1)
    raise FibergenError(msg)


def encode(obj: dict, what: str) -> bytes:
    """obj as the JSON the library reads, refusing NaN and ±Inf (JSON has none)."""
    try:
        return json.dumps(obj, allow_nan=False).encode()
    except ValueError:
        bad = {k: v for k, v in obj.items() if isinstance(v, float) and not math.isfinite(v)}
        raise ValueError(f"fibergen: {what}: {bad}: want finite numbers") from None


def take_string(p: ctypes.c_void_p) -> str:
    """Copies and frees a string the library returned."""
    try:
        return ctypes.string_at(p.value).decode("utf-8")
    finally:
        lib().fg_free(p)


def privacy(request: dict) -> dict:
    """fg_privacy: the accountant's answer to request (fibergen.privacy)."""
    out = ctypes.c_void_p()
    call("privacy", encode(request, "privacy query"), ctypes.byref(out))
    return json.loads(take_string(out))


def resolve(spec: str | os.PathLike, params: str = "") -> dict:
    """fg_resolve: the directory fg_open opens for spec — a shipped
    optimizer's name, a .dsl file (compiled into the per-user cache on first
    use) or a directory fibergen build wrote — with kernels for parameters
    stored as params ("bf16", "f16 stochastic"; "" float32): {"dir",
    "built", "warnings"}."""
    request = {"spec": os.fsdecode(spec), "params": params,
               **{k: os.environ.get(k, "") for k in ("FIBERGEN_CACHE", "XDG_CACHE_HOME", "HOME")}}
    out = ctypes.c_void_p()
    call("resolve", encode(request, "resolve"), ctypes.byref(out))
    return json.loads(take_string(out))


def shard(sizes: Sequence[int], world: int, rank: int, whole: bool = False) -> dict:
    """fg_shard: where rank's shard of tensors of these sizes, consecutive in
    one flat buffer sharded over world workers, lies: {"slice", "lo", "hi",
    "parts"} (runtime.Shard); with whole, cut only where a tensor ends, and
    every worker's "bounds" (runtime.ShardWhole)."""
    out = ctypes.c_void_p()
    call("shard", encode({"sizes": list(sizes), "world": world, "rank": rank, "whole": whole}, "shard"), ctypes.byref(out))
    return json.loads(take_string(out))


class Handle:
    """One runtime.Optimizer of the library, closed when collected. One
    call at a time, as the C ABI says of a handle: it reuses its error and
    out-buffers from call to call (a torch optimizer is stepped from one
    thread)."""

    def __init__(self, path: str | os.PathLike, **options: Any):
        h = ctypes.c_int64()
        call("open", os.fsencode(path), encode(options, "options"), ctypes.byref(h))
        self.h = h.value
        # What the calls of every step (privatize, step) pass, made once:
        # the error buffer, the places for the failing entry and the count
        # clipped, and the float pointers of the addresses they see again.
        self._err = ctypes.create_string_buffer(_ERRLEN)
        self._index, self._value, self._clipped = ctypes.c_int64(-1), ctypes.c_float(), ctypes.c_int64()
        self._refs = ctypes.byref(self._index), ctypes.byref(self._value), ctypes.byref(self._clipped)
        self._fps: dict[int, Any] = {}
        self._warned, self._warn_buf = ctypes.c_int64(), ctypes.create_string_buffer(_ERRLEN)

    def close(self) -> None:
        if self.h:
            h, self.h = self.h, 0
            call("close", h)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def info(self) -> dict:
        out = ctypes.c_void_p()
        call("info", self.h, ctypes.byref(out))
        return json.loads(take_string(out))

    def set_hypers(self, values: dict[str, float]) -> None:
        call("set_hypers", self.h, encode(values, "hypers"))

    def register_range(self, name: str, n: int) -> None:
        call("register_range", self.h, name.encode(), n)

    def set_tensor_shape(self, name: str, shape: list[int]) -> None:
        """Gives a tensor its shape, [rows..., cols], before the first step."""
        call("set_tensor_shape", self.h, name.encode(), json.dumps(shape).encode())

    def tensor_state(self, name: str, state: str, out: int, n: int) -> None:
        """Copies the tensor's part of a state into the n float32s at address
        out: its coordinates', or, for a state per row or per column, its
        rows' or columns'."""
        call("tensor_state", self.h, name.encode(), state.encode(), ctypes.cast(out, c_float_p), n)

    def set_tensor_hypers(self, name: str, values: dict[str, float]) -> None:
        call("set_tensor_hypers", self.h, name.encode(), encode(values, "hypers"))

    def set_tensors_hypers(self, names: list[str], values: dict[str, float]) -> None:
        """set_tensor_hypers for each of names, in one call."""
        call("set_tensors_hypers", self.h, json.dumps(names).encode(), encode(values, "hypers"))

    def tensor_hypers(self, names: list[str]) -> dict:
        """The optimizer's hypers and the named tensors, as info() has them."""
        out = ctypes.c_void_p()
        call("tensor_hypers", self.h, json.dumps(names).encode(), ctypes.byref(out))
        return json.loads(take_string(out))

    def set_dp(self, clip: float, noise_multiplier: float, batch_size: int) -> None:
        call("set_dp", self.h, clip, noise_multiplier, batch_size)

    def set_dp_groups(self, request: dict) -> None:
        call("set_dp_groups", self.h, encode(request, "clip groups"))

    def set_noise(self, sigma_w2: float, draw: bool) -> None:
        call("set_noise", self.h, sigma_w2, int(draw))

    def seed(self) -> int:
        s = ctypes.c_uint64()
        call("seed", self.h, ctypes.byref(s))
        return s.value

    def set_seed(self, seed: int) -> None:
        call("set_seed", self.h, seed)

    def share_key(self) -> list[int]:
        """The secure key's four words, for the ranks to agree on rank 0's
        before the first step (fg_share_key): a secret, never to be shown."""
        k = (ctypes.c_uint64 * 4)()
        call("share_key", self.h, k)
        return list(k)

    def set_key(self, key: Sequence[int]) -> None:
        call("set_key", self.h, (ctypes.c_uint64 * 4)(*key))

    def set_budget(self, request: dict) -> float:
        sigma = ctypes.c_double()
        call("set_budget", self.h, encode(request, "budget"), ctypes.byref(sigma))
        return sigma.value

    def enable_diagnostics(self) -> None:
        call("enable_diagnostics", self.h)

    def clamp_mass(self) -> float:
        v = ctypes.c_double()
        call("clamp_mass", self.h, ctypes.byref(v))
        return v.value

    def warnings(self) -> list[str]:
        """fg_warnings: the warnings given since the last call (the clamp
        warning), in Python's words; nothing is allocated when there is none."""
        call("warnings", self.h, self._warn_buf, _ERRLEN, ctypes.byref(self._warned), err=self._err)
        if not self._warned.value:
            return []
        return [pythonic(w) for w in self._warn_buf.value.decode("utf-8", "replace").split("\n")]

    def use_buffers(self, ptrs: Sequence[int], n: int) -> None:
        call("use_buffers", self.h, _float_ptrs(ptrs), len(ptrs), n)

    def gradient_written(self) -> None:
        call("gradient_written", self.h)

    def trust_clipped_gradient(self) -> None:
        call("trust_clipped_gradient", self.h)

    def _guarded(self, name: str, *args: Any) -> None:
        self._index.value = -1
        call(name, self.h, *args, *self._refs[:2], index=self._index, value=self._value, err=self._err)

    def check_gradient(self) -> None:
        self._guarded("check_gradient")

    def step(self) -> None:
        self._guarded("step")

    def step_device(self, ptrs: Sequence[int], n: int, offset: int) -> None:
        self._guarded("step_device", (ctypes.c_uint64 * len(ptrs))(*ptrs), len(ptrs), n, offset)

    def check_device_gradient(self, g: int, n: int) -> None:
        self._guarded("check_device_gradient", g, n)

    def init_device_states(self, ptrs: Sequence[int], n: int) -> None:
        call("init_device_states", self.h, (ctypes.c_uint64 * len(ptrs))(*ptrs), len(ptrs), n)

    def privatize(self, out: int, n: int, cur: int, look: int, k: int, scales_in: int,
                  scales_out: int, nscales: int, device: bool = False) -> int:
        """fg_privatize (host addresses) or fg_privatize_device (out, cur,
        look on the device); the nscales scales are host memory either way."""
        fp = self._float_p
        rows = (out, n, cur, look, k) if device else (fp(out), n, fp(cur), fp(look), k)
        self._index.value = -1
        call("privatize_device" if device else "privatize", self.h, *rows, fp(scales_in), fp(scales_out), nscales,
             self._refs[2], self._refs[0], index=self._index, err=self._err)
        return self._clipped.value

    def privatize_segments(self, out: int, n: int, segs: "Segments", k: int, scales_in: int, scales_out: int,
                           nscales: int) -> int:
        """fg_privatize_segments: the per-example gradients read in place,
        one segment per tensor (host addresses)."""
        fp = self._float_p
        self._index.value = -1
        call("privatize_segments", self.h, fp(out), n, len(segs), segs.offsets, segs.sizes, segs.cur,
             segs.look if segs.has_look else None, k, fp(scales_in), fp(scales_out), nscales, self._refs[2],
             self._refs[0], index=self._index, err=self._err)
        return self._clipped.value

    def privatize_device_groups(self, out: int, n: int, cur: list[int], look: Optional[list[int]], k: int,
                                scales_in: int, scales_out: int, nscales: int) -> int:
        """fg_privatize_device_groups: each clip group's rows a device
        matrix of their own (device addresses; the scales host memory)."""
        fp, u64s = self._float_p, lambda a: (ctypes.c_uint64 * len(a))(*a)  # noqa: E731
        self._index.value = -1
        call("privatize_device_groups", self.h, out, n, u64s(cur), u64s(look) if look is not None else None, len(cur),
             k, fp(scales_in), fp(scales_out), nscales, self._refs[2], self._refs[0], index=self._index, err=self._err)
        return self._clipped.value

    def _float_p(self, addr: int) -> Any:
        """addr as a float pointer (0: NULL), made once for the few
        addresses a trainer passes again at every step."""
        p = self._fps.get(addr)
        if p is None:
            if len(self._fps) >= 16:  # addresses that change every step: kept no longer than a few steps
                self._fps.clear()
            p = self._fps[addr] = ctypes.cast(addr, c_float_p)
        return p

    def clip_scales(self, look_norm: int, cur_norm: int, dot: int, k: int, out: int) -> None:
        bad = ctypes.c_int64(-1)
        dp = lambda p: ctypes.cast(p, c_double_p)  # noqa: E731
        call("clip_scales", self.h, dp(look_norm), dp(cur_norm), dp(dot), k, ctypes.cast(out, c_float_p),
             ctypes.byref(bad), index=bad)

    def save(self, states: Sequence[int] = (), n: int = 0) -> bytes:
        """The checkpoint, holding the digest of the states (host
        addresses of n float32s each) saved beside it."""
        p, size = ctypes.c_void_p(), ctypes.c_size_t()
        call("save", self.h, _float_ptrs(states), len(states), n, ctypes.byref(p), ctypes.byref(size))
        try:
            return ctypes.string_at(p.value, size.value)
        finally:
            lib().fg_free(p)

    def load(self, data: bytes, states: Sequence[int] = (), n: int = 0) -> None:
        call("load", self.h, data, len(data), _float_ptrs(states), len(states), n)

    def spent(self) -> Optional[dict]:
        out = ctypes.c_void_p()
        call("spent", self.h, ctypes.byref(out))
        return json.loads(take_string(out))

    def checkpoint_info(self, data: bytes) -> dict:
        out = ctypes.c_void_p()
        call("checkpoint_info", self.h, data, len(data), ctypes.byref(out))
        return json.loads(take_string(out))


class Segments:
    """The segments of fg_privatize_segments over one layout: each
    tensor's offset and size, made once, and the addresses of its
    per-example rows (and look-ahead rows), set at each call."""

    def __init__(self, offsets: Sequence[int], sizes: Sequence[int]):
        n = len(offsets)
        self.offsets, self.sizes = (ctypes.c_int64 * n)(*offsets), (ctypes.c_int64 * n)(*sizes)
        self._cur, self._look = (ctypes.c_void_p * n)(), (ctypes.c_void_p * n)()
        self.cur = ctypes.cast(self._cur, ctypes.POINTER(c_float_p))
        self.look = ctypes.cast(self._look, ctypes.POINTER(c_float_p))
        self.has_look = False

    def __len__(self) -> int:
        return len(self._cur)

    def set(self, cur: Sequence[int], look: Optional[Sequence[int]]) -> None:
        """The rows' addresses of this call (look None: no look-ahead rows)."""
        self._cur[:] = cur
        self.has_look = look is not None
        if look is not None:
            self._look[:] = look


def _float_ptrs(ptrs: Sequence[int]) -> Any:
    """Host addresses as a C array of float pointers; NULL for none."""
    if not ptrs:
        return None
    return (c_float_p * len(ptrs))(*[ctypes.cast(p, c_float_p) for p in ptrs])
