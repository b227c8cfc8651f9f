// norm(x), sum(x), mean(x), max(x) and min(x): per-tensor reductions of a
// per-coordinate value, in step outside its host block (max and min of two
// arguments are the elementwise ones). A reduction of a value that reads
// another reduction is refused when lowering (see lower's tests).

optimizer reductions

hyper lr = 0.1
scalar s = 0
scalar s2 = 0
state m = norm(theta)            // ERROR col=11 "^the initial value of state m cannot use norm: a reduction is computed between two passes"

observe two_point(a = mean(lr), lookahead = 1) // ERROR col=23 "^observe argument a cannot use mean"

step {
	host {
		s = sum(lr)              // ERROR col=7 "^the host block cannot use sum"
		s2 = min(s, lr) + max(lr) // ERROR col=21 "^the host block cannot use max"
	}
	a = norm(lr)                 // ERROR col=11 "^norm reduces a per-coordinate value over each tensor, but lr is per-step uniform$"
	b = sum(g, theta)            // ERROR col=6 "^sum takes 1 argument, got 2$"
	c = mean                     // ERROR col=6 "^mean is a function; call it as mean\(...\)$"
	e = min(lr)                  // ERROR col=10 "^min reduces a per-coordinate value over each tensor, but lr is per-step uniform$"
	f = max(g) - min(theta - g) + max(g, theta) + min(lr, g)
	d = norm(g) / mean(theta * theta) + sum(m)
	m = m + g
	theta = theta - lr * s * s2 * (a + b + c + d + e + f) * m
}
