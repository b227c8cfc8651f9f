// Package poly is exact arithmetic on multivariate polynomials and rational
// functions over the rationals, and an exact solver for linear systems and
// discrete Lyapunov equations whose entries are such functions.
//
// The compiler uses it to find closed forms of a filter's stationary
// covariance Σ = M Σ Mᵀ + b bᵀ as rational functions of an optimizer's
// hyperparameters: the variables x0, x1, ... stand for the hyperparameters,
// and, for instance, the squared ℓ2 gain of FiBeR's filter with gain ω = x0
// comes out as exactly (2 - x0)/(4 - 3*x0).
//
// A Poly has rational coefficients and is immutable: every operation returns
// a new value, and no value shares a *big.Rat with its caller. A Frac is a
// rational function kept in a canonical form (see Frac), so that two Fracs
// are Equal exactly when they are the same function. GCD views polynomials
// as univariate in their highest variable over the polynomials in the others
// and takes contents and primitive parts by exact multivariate division; it
// tries the heuristic gcd of Char, Geddes and Gonnet (evaluation at a large
// integer, verified by division) first and falls back to a primitive
// polynomial remainder sequence where that gives up.
//
// Solve and Lyapunov work over rational functions, SolveRat and
// LyapunovRat over big.Rat; both use the same fraction-free (Bareiss)
// elimination. The symbolic versions give up with ErrTooLarge when an
// intermediate result grows past a caller-given number of terms, so that
// the caller can fall back to the numeric versions at run time.
//
// The package depends only on the standard library.
package poly
