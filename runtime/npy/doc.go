// Package npy reads and writes NumPy .npy files holding float32 arrays.
//
// The .npy format is a small binary container: a magic string, a format
// version, a header that is a Python dict literal describing the array
// ('descr' dtype, 'fortran_order' and 'shape'), then the raw element bytes.
// See https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html.
//
// This package only supports what the fibergen tools exchange: C-ordered
// float32 arrays of any shape (including scalars and zero-size arrays).
//
// Read accepts format versions 1.0, 2.0 and 3.0, little-endian float32
// ('<f4') and big-endian float32 ('>f4', byte-swapped on load). Everything
// else (other dtypes, Fortran order, object arrays, truncated or oversized
// data) is rejected with a one-line error that names the problem and, where
// possible, how to fix it on the NumPy side. Read never allocates more than
// the data actually present, so a header claiming a huge shape cannot
// exhaust memory.
//
// Write produces exactly the bytes np.save produces (NumPy >= 1.23) for a
// float32 C-contiguous array: format 1.0, header
// {'descr': '<f4', 'fortran_order': False, 'shape': (...), } padded with
// spaces and a newline to a multiple of 64 bytes. WriteFile replaces its
// target atomically.
package npy
