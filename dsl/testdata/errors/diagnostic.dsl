// The diagnostic declarations: a known kind, declared once, naming
// per-coordinate locals or states of step, the second a max with a uniform floor.

optimizer diagnostic_errors

hyper lr = 0.1
hyper beta = 0.9
hyper eps_v = 1e-8
state m = 0
state v = 0

step {
	m = beta * m + (1 - beta) * g
	v = max(beta * v + g * g, eps_v)
	bc = 1 - beta ** (t + 1)
	mhat = m / bc
	vbar = max(v / bc, eps_v)
	vnot = sqrt(v)
	vvar = max(eps_v, v)
	theta = theta - lr * mhat / (sqrt(vbar) + sqrt(vnot) + vvar)
}

diagnostic clamp_mass(mhat, vbar)
diagnostic clamp_mass(m, v)         // ERROR col=12 "^duplicate diagnostic clamp_mass \(first at 23:1\)$"
diagnostic clamp_max(mhat, vbar)    // ERROR col=12 "^unknown diagnostic clamp_max \(known: clamp_mass\)$"
diagnostic clamp_mass(mhat)         // ERROR col=12 "^diagnostic clamp_mass takes 2 names \(the first moment and the floored second moment\), got 1$"
