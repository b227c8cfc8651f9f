// Package corrnoise is the arithmetic of correlated (matrix-factorization)
// noise for DP optimizers: Toeplitz coefficient algebra, the sensitivity
// of a strategy under min-separation participation, the error of a noise
// filter, buffered linear Toeplitz (BLT) filters and a designer that picks
// a BLT for a number of steps, a minimum separation and a number of
// buffers. It imports only the standard library.
//
// Step t of a run adds σ_w·w_t to the clipped mean gradient x_t, where the
// noise w_t = Σ_{s≤t} c_{t−s} z_s is a lower-triangular Toeplitz filter
// (the noise filter, coefficients c_0, c_1, …) of fresh standard normals.
// In matrix-factorization terms (Denisov et al. 2022; Choquette-Choo et al.
// 2023, "Multi-Epoch Matrix Factorization Mechanisms for Private Machine
// Learning") the filter is C⁻¹, and the strategy C is the lower-triangular
// Toeplitz matrix of the inverse series r (r * c = δ): the run releases
// C⁻¹(C x + σ z), so its privacy is that of the Gaussian mechanism on C x,
// whose ℓ2 sensitivity Sensitivity computes. The error of the prefix sums
// (what SGD's iterate accumulates) is that of B = A C⁻¹, A the all-ones
// lower triangle: Error.
//
// Every figure is float64. The designer's noise filter is rounded to
// float32, as the kernel evaluates it, before its sensitivity is computed,
// so that the figures are those of the filter that runs.
package corrnoise
