// The privacy rule: g is read only inside step — a state's initial value
// may read it, being step 0's privatized g (docs/dsl.md), but a hyper's
// default may not. State initial values use numbers, hypers, theta and g
// only; the observation's weights are per-step uniform.

optimizer privacy

hyper lr = 0.1
hyper gamma = 0.7

observe two_point(a = g * 0, lookahead = gamma) // ERROR col=23 "^privacy: observe argument a cannot read g; gradient information enters only through g, the privatized gradient, and only inside step$"

hyper h = lr * (1 + g)       // ERROR col=21 "^privacy: the default of hyper h cannot read g"

state m = g
state v = lr * (1 + g)
state w = t                  // ERROR col=11 "^the initial value of state w may use only numbers, hypers, theta and g, not built-in t$"
state x = theta
state y = m + 1              // ERROR col=11 "^the initial value of state y may use only numbers, hypers, theta and g, not state m$"
state z = sigma_w2           // ERROR col=11 "^the initial value of state z may use only numbers, hypers, theta and g, not built-in sigma_w2$"
state ok = -lr * 2 + sqrt(gamma) / max(lr, 1)

step {
	m = g; v = g; w = g; x = g; y = g; z = g; ok = g
	theta = theta - lr * (m + v + w + x + y + z + ok)
}
