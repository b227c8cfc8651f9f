// Attenuation computed on the host: attenuation_t (the finite-time gain, a
// running sum in the generated Host) and attenuation of a five-state
// cascade, more states than fibergen solves symbolically, so both targets
// solve it exactly at each hyper setting — read by the host block, which
// runs every step, while the generated Host solves it once (NewHost).

optimizer gains

hyper k1 = 0.5 in (0, 1]
hyper k2 = 0.4 in (0, 1]
hyper k3 = 0.3 in (0, 1]
hyper lr = 0.01

scalar late = 0 // the noise variance that reaches e5

state e1 = 0
state e2 = 0
state e3 = 0
state e4 = 0
state e5 = 0

step {
	host {
		late = attenuation(e5) * sigma_w2
	}
	e1 = (1 - k1) * e1 + k1 * g
	e2 = (1 - k2) * e2 + k2 * e1
	e3 = (1 - k3) * e3 + k3 * e2
	e4 = (1 - k2) * e4 + k2 * e3
	e5 = (1 - k1) * e5 + k1 * e4
	early = attenuation_t(e1) * sigma_w2
	theta = theta - lr * e5 / sqrt(e5 * e5 + early + late + 1)
}
