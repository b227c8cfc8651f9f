// Calls: only the built-in functions, with their number of arguments, and
// functions only called, never used as values.

optimizer calls

hyper lr = 0.1
state m = sqrt // ERROR col=11 "^sqrt is a function; call it as sqrt\(...\)$"

step {
	a = cosh(g)         // ERROR col=6 "^undefined function cosh \(the functions are abs, cos, exp, log, max, min, select, sign, sin, sqrt, norm, sum, mean, colmean, colsum, rowmean, rowsum, attenuation and attenuation_t\)$"
	b = sqrt(g, g)      // ERROR col=6 "^sqrt takes 1 argument, got 2$"
	c = max(g, g, g)    // ERROR col=6 "^max takes 2 arguments, got 3$"
	d = 1 + min()       // ERROR col=10 "^min takes 2 arguments, got 0$"
	e = lr(g)           // ERROR col=6 "^lr is not a function$"
	f = m(2)            // ERROR col=6 "^m is not a function$"
	h = g(1) + theta(0) // ERROR col=6 "^g is not a function$"
	i = abs + 1         // ERROR col=6 "^abs is a function; call it as abs\(...\)$"
	ok = sqrt(abs(g)) + max(min(g, m), -1) + abs(-lr) + max(g, 0,) + sign(g - m) * sign(lr)
	m = a + b + c + d + e + f + h + i + ok
	theta = theta - lr * m
}
