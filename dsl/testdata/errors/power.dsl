// The rules of **: a uniform exponent, and a constant integer one within
// ±64 when the base is per-coordinate.

optimizer power

hyper lr = 0.1
hyper k = 2
state m = 0

step {
	a = g ** g                  // ERROR col=11 "^exponent of \*\* must be per-step uniform, but it is per-coordinate$"
	b = lr ** m                 // ERROR col=12 "^exponent of \*\* must be per-step uniform"
	c = g ** k                  // ERROR col=11 "^with a per-coordinate base the exponent of \*\* must be a constant integer \(x \*\* 2\)"
	d = g ** (t + 1)            // ERROR col=11 "must be a constant integer"
	e = g ** 2.5                // ERROR col=11 "^with a per-coordinate base the exponent of \*\* must be an integer between -64 and 64, not 2.5$"
	f = g ** 65                 // ERROR col=11 "between -64 and 64, not 65$"
	h = m ** -65                // ERROR col=11 "between -64 and 64, not -65$"
	i = (g + m) ** (1 / 3)      // ERROR col=17 "between -64 and 64, not 0.333"
	ok = g ** 64 + g ** -64 + g ** 0 + g ** (1 + 1) + lr ** k + lr ** 0.5 + k ** (t + 1) + 2 ** -1 - -g ** 2
	m = a + b + c + d + e + f + h + i + ok
	theta = theta - lr * m
}
