// The clamped second moment must be max(x, floor) with x per-coordinate (a
// uniform first argument is the floor written first), and the first moment
// per-coordinate.

optimizer diagnostic_floor

hyper lr = 0.1
hyper eps_v = 1e-8
state m = 0

step {
	m = 0.9 * m + g
	bc = 1 - 0.9 ** (t + 1)
	vvar = max(eps_v, m * m)
	theta = theta - lr * m / (bc + vvar)
}

diagnostic clamp_mass(
	bc,      // ERROR col=2 "^diagnostic clamp_mass needs the first moment per-coordinate, but bc is per-step uniform$"
	vvar,    // ERROR col=2 "^diagnostic clamp_mass needs vvar defined as max\(x, floor\) with a per-coordinate x, but vvar is .max\(eps_v, m \* m\). \(line 14\)$"
)
