// Scalars: uniform values carried from step to step, updated in the host
// block that opens step, from numbers, hypers, t, sigma_w2, the
// attenuations and scalars only.

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
		x = sigma_w2 * attenuation_t(m) // the noise's variance and gain may be read
		c = 0.9 * c + lr * min(t, 1) + x
		f = 2 * f
		d = m           // ERROR col=7 "^the host block computes the scalars once per step, in float64: it may read numbers, hypers, t, sigma_w2, scalars, the attenuations and its own locals, not per-coordinate m$"
		m = prev        // ERROR col=3 "^the host block updates scalars and binds locals; state m is per coordinate: update it in step$"
		y = attenuation(x) // ERROR col=19 "^the argument of attenuation must be the name of a state$"
	}
	m = m + g * c + prev // ERROR col=18 "^prev is a local of the host block, which only the host block reads; keep the value in a scalar to read it in step$"
	c = 1               // ERROR col=2 "^scalar c is updated in the host block, once per step, not per coordinate in step$"
	theta = theta - lr * m
}
