// States per row and per column of 2-D tensors, and the row and column
// reductions (docs/dsl.md, "Rows and columns"): the checker's errors.
optimizer lines
hyper lr = 1e-3 in [0, inf)
hyper beta2 = 0.9 in [0, 1)
state r: rows = 0
state c: cols = beta2
state m = 0
state r0: rows = 0
state c0: cols = 0
state rs: rows = 0
scalar s = 0
scalar s2 = 0
step {
	host {
		s = colsum(lr)            // ERROR col=7 "^the host block cannot use colsum"
		s2 = r + 1                // ERROR col=8 "^the host block computes the scalars once per step, in float64, and reads no value of a tensor; r is per row$"
	}
	r0 = r0 + rowsum(lr)          // ERROR col=19 "^rowsum reduces a per-coordinate value along each row of a 2-D tensor, but lr is per-step uniform$"
	c0 = c0 + colmean(c)          // ERROR col=20 "^colmean reduces a per-coordinate value along each column of a 2-D tensor, but c is per column: sum and mean reduce it over the tensor$"
	rs0 = rowmean(g, theta) + c0  // ERROR col=8 "^rowmean takes 1 argument, got 2$"
	r = beta2 * r + rowmean(g * g)
	rs = beta2 * rs + colmean(g)    // ERROR col=7 "^state rs is per row, but `beta2 \* rs \+ colmean\(g\)` is per coordinate \(a value per row with one per column is per coordinate\): a state per row"
	c = c * g                     // ERROR col=6 "^state c is per column, but `c \* g` is per coordinate: a state per row takes values per row"
	rc = r * c + g ** c + r ** 0.5 + exp(-c) // ERROR col=20 "^exponent of \*\* is per column and the base per coordinate: the power is per coordinate, where the kernel raises only to constant integers$"
	m = rc + r + mean(r) + max(c) + attenuation(r) // ERROR col=46 "^attenuation of state r, which is per row: the noise gain is derived for the filters of states per coordinate"
	theta = theta - lr * s * s2 * m * rs * c0 * r0 * rs0
}
