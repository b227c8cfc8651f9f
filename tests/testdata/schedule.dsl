// A filter whose coefficient b = 0.5 + t / warmup follows a schedule past
// 1 when warmup is small: it grows from the first step where b > 1 (step 3
// at warmup = 4). Read by tests' TestGeneratedVaryingCheck and by
// cmd/fibergen's TestVaryingUnstable, which also builds it at warmup = 100.
optimizer schedule
hyper lr = 0.1 in [0, inf)
hyper warmup = 1e9 in [1, inf)
scalar b = 0
state m = 0
step {
	host {
		b = 0.5 + t / warmup
	}
	m = b * m + g
	theta = theta - lr * m
}
