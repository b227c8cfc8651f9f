// Scalars: uniform values carried from step to step, updated in the host
// block that opens step, from numbers, hypers, t and scalars only.

optimizer scalars

hyper lr = 0.1 in (0, inf)
scalar c = lr
scalar d = g        // ERROR col=12 "^privacy: the initial value of scalar d cannot read g; gradient information enters only through g, the privatized gradient, and only inside step$"
scalar f = theta    // ERROR col=12 "^the initial value of scalar f may use only numbers and hypers, not built-in theta$"
scalar e = 0        // ERROR col=8 "^scalar e is never updated in the host block \(host \{ e = \.\.\. \} first in step\)$"
state m = 0

step {
	host {
		prev = c
		c = 0.9 * c + lr * min(t, 1)
		f = 2 * f
		d = m           // ERROR col=7 "^the host block computes the scalars once per step, in float64: it may read numbers, hypers, t, scalars and its own locals, not per-coordinate m$"
		m = prev        // ERROR col=3 "^the host block updates scalars and binds locals; state m is per coordinate: update it in step$"
		x = sigma_w2    // ERROR col=7 "^the host block may not read sigma_w2: a scalar is a function of the hypers and t alone, which is how a checkpoint restores it$"
	}
	m = m + g * c + prev // ERROR col=18 "^prev is a local of the host block, which only the host block reads; keep the value in a scalar to read it in step$"
	c = 1               // ERROR col=2 "^scalar c is updated in the host block, once per step, not per coordinate in step$"
	theta = theta - lr * m
}
