// attenuation(STATE) and attenuation_t(STATE): the argument must name a
// state, and the call must be inside step. Whether the noise reaches the
// state linearly is checked when lowering (see ir's tests).

optimizer attenuation

hyper omega = 0.9
state gt = 0
state z = attenuation(gt)           // ERROR col=11 "^the initial value of state z cannot use attenuation: the noise gain of a state is known only inside step$"

observe two_point(a = attenuation_t(gt), lookahead = 1) // ERROR col=23 "^observe argument a cannot use attenuation_t"

step {
	nu = g - gt
	gt = gt + omega * nu
	z = z
	a = attenuation(gt) * sigma_w2
	b = attenuation_t((gt))
	c = attenuation(omega)           // ERROR col=18 "^the argument of attenuation must be the name of a state$"
	d = attenuation(nu)              // ERROR col=18 "^the argument of attenuation must be the name of a state$"
	e = attenuation(gt + 1)          // ERROR col=18 "^the argument of attenuation must be the name of a state$"
	f = attenuation_t(g)             // ERROR col=20 "^the argument of attenuation_t must be the name of a state$"
	h = attenuation(gt, gt)          // ERROR col=6 "^attenuation takes 1 argument, got 2$"
	i = attenuation                  // ERROR col=6 "^attenuation is a function; call it as attenuation\(...\)$"
	j = attenuation_t()              // ERROR col=6 "^attenuation_t takes 1 argument, got 0$"
	theta = theta - gt * (a + b + c + d + e + f + h + i + j)
}
