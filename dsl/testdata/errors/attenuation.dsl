// attenuation(STATE) is reserved: its argument must name a state, and the
// factor is not derived yet, so every use is an error.

optimizer attenuation

hyper omega = 0.9
state gt = 0

step {
	nu = g - gt
	gt = gt + omega * nu
	a = attenuation(gt) * sigma_w2   // ERROR col=6 "^attenuation\(gt\) is reserved: fibergen does not derive attenuation factors yet; write the closed form by hand"
	b = attenuation((gt))            // ERROR col=6 "^attenuation\(gt\) is reserved"
	c = attenuation(omega)           // ERROR col=18 "^the argument of attenuation must be the name of a state$"
	d = attenuation(nu)              // ERROR col=18 "^the argument of attenuation must be the name of a state$"
	e = attenuation(gt + 1)          // ERROR col=18 "^the argument of attenuation must be the name of a state$"
	f = attenuation(g)               // ERROR col=18 "^the argument of attenuation must be the name of a state$"
	h = attenuation(gt, gt)          // ERROR col=6 "^attenuation takes 1 argument, got 2$"
	i = attenuation                  // ERROR col=6 "^attenuation is a function; call it as attenuation\(...\)$"
	theta = theta - gt * (a + b + c + d + e + f + h + i)
}
