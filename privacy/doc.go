// Package privacy is fibergen's privacy accountant: the (ε, δ) that a
// run of a DP optimizer spends, and the noise multiplier σ that meets a
// target ε, by Rényi differential privacy (RDP).
//
// Each step of DP training is a subsampled Gaussian mechanism: a batch
// is sampled, per-example gradients are clipped and summed, and Gaussian
// noise of standard deviation σ times the sum's sensitivity is added.
// Mechanism.RDP gives its RDP at a set of orders for the two samplings
// fibergen supports: Poisson sampling under add/remove-one adjacency
// (Mironov, Talwar and Zhang 2019; the values of Opacus and Google's
// dp_accounting) and fixed-size batches sampled without replacement under
// replace-one adjacency (Wang, Balle and Kasiviswanathan 2019, the
// Theorem 27 bound dp_accounting computes, with its moments computed
// without cancellation and capped at the Gaussian's own RDP). RDP
// composes by addition over steps; EpsilonFromRDP converts it to (ε, δ)
// by the bound of Balle et al. 2020.
//
// Plan (sample rate, steps, δ) and Schedule (dataset size, batch size,
// epochs, δ = 1/N^1.1 by default) answer the two questions a user asks:
// Plan.Epsilon and Plan.Sigma, Schedule.SigmaFor; their Accountant
// reports the ε spent after any step. Everything is computed in log
// space and never overflows. docs/privacy.md gives the formulas, the
// numerical choices and what the tests check against.
package privacy
