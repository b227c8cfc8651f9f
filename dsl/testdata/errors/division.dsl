// Division by a literal zero, found by folding constants.

optimizer division

hyper lr = 0.1
state m = 1 / 0                     // ERROR col=13 "^division by zero$"

observe two_point(a = lr / (2 - 2), lookahead = 1) // ERROR col=26 "^division by zero$"

step {
	a = g / 0                       // ERROR col=8 "^division by zero$"
	b = g / (1 - 1)                 // ERROR col=8 "^division by zero$"
	c = g / -0.0                    // ERROR col=8 "^division by zero$"
	d = g * 0 ** -1                 // ERROR col=12 "^division by zero \(0 to a negative power\)$"
	e = (1 - 1) ** (0 - 2)          // ERROR col=14 "^division by zero \(0 to a negative power\)$"
	f = g / min(0, 1)               // ERROR col=8 "^division by zero$"
	ok = g / (lr - lr) + 0 ** 0 + 1 / g + 0 ** 0.5 + g / 1e-300
	m = a + b + c + d + e + f + ok
	theta = theta - lr * m
}
