// Package lang holds the facts of fibergen's language that its front end
// (package dsl), its IR (package ir) and its command line share, so that
// each is written once: what every operation computes — on the host in
// float64, in the kernels in float32 — how it is written and how tightly it
// binds, its name in the IR and its number of operands (one table, op.go,
// by whose numbers package ir numbers its arithmetic operations), the
// interval of a hyper's range and its check (rangecheck.go, which the
// generated packages carry), how a hyper is set from outside a file
// (name=value, ParseSetting), and the language's names and limits. It
// imports only the standard library, and nothing of fibergen imports less.
package lang

// LookaheadState names the state that the compiler adds to a two_point
// optimizer, and that its step writes for the trainer: the next look-ahead
// point θ_{t+1} + γ·(θ_{t+1} − θ_t), where γ is the observation's lookahead
// argument. The trainer evaluates the per-example gradients of the next step
// there. Before the first step the look-ahead point is θ_0 itself
// (d_{-1} = 0), so the state starts at 0 and is not read until a step has
// written it. A declared state may not take the name.
const LookaheadState = "lookahead"

// MaxPowExponent bounds |n| in x ** n for a per-coordinate x, which is
// expanded into |n| − 1 multiplications (and a division for n < 0).
const MaxPowExponent = 64
