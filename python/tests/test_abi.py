"""What the binding declares of the C ABI is what libfibergen.h says: every
function's signature, the version and every status, read from the header
that cgo writes (make python-lib) and compared with _abi.py (generated from
capi's Go source by capi/internal/genpy) and with the declarations _lib.py
makes from it on the loaded library; and the binding holds no number of the
ABI of its own."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import pytest

from fibergen import _abi, _lib

ROOT = Path(__file__).resolve().parents[2]

# C's types in the header, as ctypes: a char** is an out string the caller
# frees (fg_free), kept as an address; a void** likewise.
_C_TYPES = {
    "int": ctypes.c_int, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t,
    "double": ctypes.c_double, "float": ctypes.c_float, "void*": ctypes.c_void_p, "char*": ctypes.c_char_p,
    "char**": ctypes.POINTER(ctypes.c_void_p), "void**": ctypes.POINTER(ctypes.c_void_p), "void": None,
}


def c_type(decl: str) -> object:
    """The ctypes type of a C type as cgo writes it ("int64_t*", "float**")."""
    decl = decl.replace(" ", "")
    if decl in _C_TYPES:
        return _C_TYPES[decl]
    assert decl.endswith("*"), decl
    return ctypes.POINTER(c_type(decl[:-1]))


def header() -> str:
    path = _lib.library_path().with_suffix(".h")
    if not path.exists():
        pytest.skip(f"{path} is not built (make python-lib)")
    return path.read_text()


def header_functions(text: str) -> dict[str, tuple[object, list[object]]]:
    """The header's fg_ functions: name -> (restype, argtypes)."""
    out = {}
    for ret, name, params in re.findall(r"^extern (\w+\**) (fg_\w+)\((.*)\);$", text, re.M):
        args = [] if params.strip() in ("", "void") else \
            [c_type(re.sub(r"\w+$", "", p.strip())) for p in params.split(",")]
        out[name] = (c_type(ret), args)
    return out


def test_signatures_match_the_header():
    want = header_functions(header())
    assert len(want) > 30
    assert sorted(_abi.SIGNATURES) == sorted(want)
    lib = _lib.lib()
    for name, (restype, args) in want.items():
        got_restype, got_args = _abi.SIGNATURES[name]
        assert (got_restype, list(got_args)) == (restype, args), name
        f = getattr(lib, name)
        assert (f.restype, list(f.argtypes)) == (restype, args), name


def test_statuses_and_version_match_the_header():
    defines = {k: int(v) for k, v in re.findall(r"^#define FG_(\w+) (\d+)$", header(), re.M)}
    assert {"OK", "ERROR", "NONFINITE", "BAD_EXAMPLE", "ABI_VERSION"} <= set(defines)
    for name, value in defines.items():
        assert getattr(_abi, name) == value, name
    assert _lib.ABI_VERSION == defines["ABI_VERSION"] == _lib.lib().fg_abi_version()


def test_the_binding_holds_no_abi_number():
    """_lib.py and torch.py name the statuses and the buffers' positions
    through _abi, and write none of their values themselves."""
    for name in ("_lib.py", "torch.py"):
        src = (ROOT / "python" / "fibergen" / name).read_text()
        assert "ctypes.c_int64," not in src, name  # no signature of its own
        for pattern in (r"\bstatus == \d", r"buffers\"\]\[\d", r"\[\w+ - \d\]", r"_buffer\(\d", r"% 4\b", r"\b80\b"):
            assert not re.search(pattern, src), (name, pattern)


def test_shard_and_ranges(generated):
    """fg_shard lays out the groups as runtime.Shard does; a range's own
    hypers show in fg_info, and one that shapes the observation is
    refused."""
    assert _lib.shard([5, 6], 2, 1) == {"slice": 8, "lo": 8, "hi": 16, "parts": [[8, 8], [8, 11]]}
    with pytest.raises(_lib.FibergenError, match="shard 2 of 2"):
        _lib.shard([5], 2, 2)
    h = _lib.Handle(generated / "fiber", backend="go")
    h.register_range("a", 3)
    h.register_range("b", 5)
    h.set_tensor_hypers("b", {"lr": 0.25})
    with pytest.raises(_lib.FibergenError, match="shapes the observation"):
        h.set_tensor_hypers("a", {"kappa": 0.5})
    info = h.info()
    assert [(t["name"], t["offset"], t["len"], t["own"]) for t in info["tensors"]] == [("a", 0, 3, {}), ("b", 3, 5, {"lr": 0.25})]
    lr = lambda hypers: next(x["value"] for x in hypers if x["name"] == "lr")  # noqa: E731
    assert lr(info["tensors"][1]["hypers"]) == 0.25 and lr(info["tensors"][0]["hypers"]) == lr(info["hypers"]) == 1e-3
    assert info["host_buffer_pad"][:3] == [0, 80, 160] and len(info["host_buffer_pad"]) == len(info["buffers"])
    h.close()


def test_tensors_hypers(generated):
    """fg_set_tensors_hypers gives several ranges the same hypers in one
    call, and changes none where a name is unknown or the hypers are
    refused; fg_tensor_hypers reads back the named ranges alone, as fg_info
    has them."""
    h = _lib.Handle(generated / "fiber", backend="go")
    for name, n in (("a", 3), ("b", 5), ("c", 2)):
        h.register_range(name, n)
    h.set_tensor_hypers("c", {"lr": 0.5})
    h.set_tensors_hypers(["a", "c"], {"lr": 0.25})
    for names, values, match in ((["a", "nope"], {"lr": 0.125}, "no tensor \"nope\""), (["b", "c"], {"kappa": 0.5}, "shapes the observation")):
        with pytest.raises(_lib.FibergenError, match=match):
            h.set_tensors_hypers(names, values)
    got = h.tensor_hypers(["c", "a"])
    info = h.info()
    assert [t["name"] for t in got["tensors"]] == ["c", "a"] and got["hypers"] == info["hypers"]
    assert got["tensors"] == [info["tensors"][2], info["tensors"][0]]
    assert [t["own"] for t in info["tensors"]] == [{"lr": 0.25}, {}, {"lr": 0.25}]
    with pytest.raises(_lib.FibergenError, match="tensor names"):
        h.tensor_hypers("a")  # a string, not an array
    h.close()
