#!/usr/bin/python3
"""Generate the NumPy .npy fixtures used by runtime/npy tests.

The fixtures are committed, so the Go tests never need NumPy. To regenerate
them (for example after adding a case), run from the repository root:

    /usr/bin/python3 runtime/npy/testdata/gen.py

It needs NumPy (Debian: apt-get install python3-numpy). Note that `python3`
on PATH may be a different interpreter without NumPy. The Write golden
tests compare Go output byte for byte with the *_f4*.npy files written by
np.save here; NumPy >= 1.23 pads the header with spare space for growth
(GROWTH_AXIS_MAX_DIGITS), which the Go writer reproduces.
"""

import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, arr):
    np.save(os.path.join(HERE, name), arr, allow_pickle=False)


def save_version(name, arr, version):
    with open(os.path.join(HERE, name), "wb") as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=False)


def main():
    f4 = np.float32
    # Float32 C-order arrays: golden files for Write and fixtures for Read.
    save("scalar_f4.npy", np.array(1.5, dtype=f4))
    save("empty_f4.npy", np.zeros((0,), dtype=f4))
    save("vec5_f4.npy", np.arange(5, dtype=f4) * f4(0.5) - f4(1))
    save("mat3x4_f4.npy", np.arange(12, dtype=f4).reshape(3, 4) / f4(4))
    save("empty2x0_f4.npy", np.zeros((2, 0), dtype=f4))
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45], dtype=f4)
    save("special_f4.npy", special)
    # NaNs with payloads (quiet, negative, signalling) must keep their bits.
    nan_bits = np.array([0x7FC00001, 0xFFC00000, 0x7F800001], dtype="<u4")
    save("nanbits_f4.npy", nan_bits.view(f4))
    # Files Read must accept.
    save_version("v2_f4.npy", np.arange(6, dtype=f4).reshape(2, 3), (2, 0))
    save_version("v3_f4.npy", np.arange(3, dtype=f4), (3, 0))
    save("bigendian_f4.npy", np.array([1.0, -2.5, 3.25], dtype=">f4"))
    # Files Read must reject.
    save("f8.npy", np.arange(3, dtype=np.float64))
    save("i4.npy", np.arange(3, dtype=np.int32))
    save("fortran_f4.npy",
         np.asfortranarray(np.arange(6, dtype=f4).reshape(2, 3)))
    np.save(os.path.join(HERE, "object.npy"),
            np.array([1, "a"], dtype=object), allow_pickle=True)


if __name__ == "__main__":
    main()
