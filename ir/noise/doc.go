// Package noise is fibergen's noise analysis: how the DP noise w in the
// privatized gradient g reaches each state of an optimizer's step, and by
// how much a filter attenuates it.
//
// Analyze finds, for every state that carries the noise linearly, the
// state-space model z_t = M z_{t-1} + b w_t (analyze.go), with M and b
// rational functions of the hypers. Solve derives the state's steady-state
// attenuation A = Σ[t][t] from the Lyapunov equation Σ = M Σ Mᵀ + b bᵀ,
// exactly, over rational functions (package poly), with the conditions
// under which M is stable (Jury's, stability.go); a model too large for a
// closed form is left to the host, which solves it at each hyper setting
// (package gain). Gain.At evaluates a solution at one setting.
//
// Package lower runs the analysis while it lowers a step and turns each
// solution into IR; explain shows it.
package noise
