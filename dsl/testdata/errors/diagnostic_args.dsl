// The names a diagnostic measures must be per-coordinate locals or states
// of step; a diagnostic may come before step. A newline after a comma
// continues the list, so each name can show its own error.

optimizer diagnostic_args

hyper lr = 0.1
hyper eps_v = 1e-8
state m = 0

diagnostic clamp_mass(
	g,       // ERROR col=2 "^diagnostic clamp_mass needs the first moment as a local or state of step, not the built-in g$"
	vmin,    // ERROR col=2 "^diagnostic clamp_mass needs vmin defined as max\(x, floor\) with a per-coordinate x, but vmin is .min\(mhat \* mhat, eps_v\). \(line 20\)$"
)

step {
	m = 0.9 * m + g
	bc = 1 - 0.9 ** (t + 1)
	mhat = m / bc
	vmin = min(mhat * mhat, eps_v)
	theta = theta - lr * mhat / (sqrt(vmin) + bc)
}
