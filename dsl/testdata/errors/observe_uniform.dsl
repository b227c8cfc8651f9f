// The observation's weights must be per-step uniform and use only numbers,
// hypers and t: the runtime computes them from these, before the
// per-example gradients.

optimizer observe_uniform

hyper kappa = 0.6
state m = 0

observe two_point(
	a = t / (t + 1) * kappa + sigma_w2, // ERROR col=28 "^observe argument a may use only numbers, hypers and t, not built-in sigma_w2$"
	lookahead = m,       // ERROR col=14 "^observe argument lookahead must be per-step uniform, but m is per-coordinate$"
)
observe two_point(a = 1, lookahead = 1) // ERROR col=1 "^duplicate observe declaration \(first at 10:1\)$"

step {
	m = m + g
	theta = theta - m
}
