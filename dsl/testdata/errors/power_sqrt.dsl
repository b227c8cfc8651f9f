// A fractional exponent on a per-coordinate value: ** 0.5 and ** -0.5 point
// to sqrt.

optimizer power_sqrt

hyper lr = 0.1
state v = 0

step {
	j = v ** 0.5                // ERROR col=11 "^with a per-coordinate base the exponent of \*\* must be an integer, not 0.5: for a square root write sqrt\(x\), which every target rounds alike$"
	l = v ** -0.5               // ERROR col=11 "not -0.5: for a square root write 1 / sqrt\(x\)"
	v = v + g * g + j + l
	theta = theta - lr * g / sqrt(v + lr ** 0.5)
}
