// Package privacy is fibergen's privacy accountant: the (ε, δ) that a
// run of a DP optimizer spends, and the noise multiplier σ that meets a
// target ε. Two accountants answer (Accounting): PLD, the default, which
// composes the privacy loss distribution of the steps numerically and is
// tight to about 2·10⁻⁵ relatively, and RDP, Rényi differential privacy
// composed over the steps and converted to (ε, δ). Both are upper bounds
// on the true ε.
//
// Each step of DP training is a subsampled Gaussian mechanism: a batch
// is sampled, per-example gradients are clipped and summed, and Gaussian
// noise of standard deviation σ times the sum's sensitivity is added.
// fibergen supports two samplings: Poisson sampling under add/remove-one
// adjacency and fixed-size batches sampled without replacement under
// replace-one adjacency.
//
// PLDAccountant composes each step's dominating pair (the add and remove
// pairs of Poisson sampling, each composed on its own; for fixed-size
// batches the pair of Zhu, Dong and Wang 2022), discretised on a grid by
// connect the dots (Doroshenko et al. 2022) so that the discrete PLD
// dominates the exact one, by FFT convolutions whose tails are cut within
// a budget of 10⁻³·δ; Slack bounds how far its ε is above the true one,
// and a grid too large for it is ErrBeyondPLD ("use the RDP accountant").
// Before the last step it reports the ε of the next of Milestones evenly
// spaced steps, an upper bound, so that a report costs no composition.
//
// RDPAccountant uses Mechanism.RDP, the RDP at a set of orders: for
// Poisson sampling the values of Opacus and Google's dp_accounting
// (Mironov, Talwar and Zhang 2019), for fixed-size batches the Theorem 27
// bound of Wang, Balle and Kasiviswanathan 2019 that dp_accounting
// computes, with its moments computed without cancellation and capped at
// the Gaussian's own RDP. RDP composes by addition over steps;
// EpsilonFromRDP converts it to (ε, δ) by the bound of Balle et al. 2020.
//
// Plan (sample rate, steps, δ, sampling, accounting) and Schedule (dataset
// size, batch size, epochs, δ = 1/N^1.1 by default) answer the two
// questions a user asks: Plan.Epsilon and Plan.Sigma, Schedule.SigmaFor
// (σ never overshoots the target); their Accountant reports the ε spent
// after any step, and Plan.DeltaAt the δ of an ε. Everything is computed
// in log space and never overflows. docs/privacy.md gives the formulas,
// the numerical choices and what the tests check against.
package privacy
