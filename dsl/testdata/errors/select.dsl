// select(condition, a, b): a where the comparison holds, else b; a
// comparison only as select's first argument, and comparisons do not chain.

optimizer select_errors

hyper lr = 0.1 in (0, inf)
hyper warmup = 10 in [1, inf)
state m = 0

step {
	ok = select(m * g > 0, g, 0) + select(t < warmup, (t + 1) / warmup, 1) * select(g != g, 0, 1)
	ok2 = select((g <= 0), -1, select(g >= 1, 2, 3)) + select(1 == 1, 1, 0) + select(select(g < 0, 1, 0) < 1, 1, 2)
	a = m < g           // ERROR col=8 "^a comparison is a condition: use it as the first argument of select\(condition, a, b\), which gives a where it holds and b elsewhere$"
	b = select(g, 1, 0) // ERROR col=13 "^the first argument of select must be a comparison: a < b, a <= b, a > b, a >= b, a == b or a != b$"
	c = select(g < 1 < 2, 1, 0) // ERROR col=19 "^comparisons do not chain: a < b < c is not a condition; compare two values$"
	d = select(g < 1, 1) // ERROR col=6 "^select takes 3 arguments, got 2$"
	e = select(g < 1, 1, 0) < 2 // ERROR col=26 "^a comparison is a condition"
	m = m + ok + ok2 + a + b + c + d + e
	theta = theta - lr * m
}
