// States per row and per column: the declarations' errors (docs/dsl.md,
// "Rows and columns").
optimizer lines_decl
hyper lr = 1e-3 in [0, inf)
state rb: rows bf16 = 0           // ERROR col=16 "^state rb is per row and holds float32: it is one value a row, where a storage type saves nothing; remove bf16$"
state r0: rows = theta            // ERROR col=18 "^the initial value of state r0 cannot read theta, which is per coordinate: the state holds one value per row; start it from numbers and hypers$"
state c0: cols = g                // ERROR col=18 "^the initial value of state c0 cannot read g, which is per coordinate"
state rs: rows = rowmean(g)       // ERROR col=18 "^the initial value of state rs cannot use rowmean: a reduction is computed"
state cs: cols f16 stochastic = 0 // ERROR col=16 "^state cs is per column and holds float32: it is one value a column"
state rr: rows cols = 0           // ERROR col=16 "^state rr is declared rows and cols: a state holds one value per row or one per column, not both"
state r2: rows rows = 0           // ERROR col=16 "^state r2 is declared rows twice$"
state r3: bf16 rows = 0           // ERROR col=16 "^rows after the storage type bf16: a state per row or per column holds float32: declare it as state r3: rows = …$"
state r4: row = 0                 // ERROR col=11 "^unknown storage type row: fibergen stores f32, bf16 and f16 \(did you mean rows, a state per row\?\)$"
step {
	rb = rb
	r0 = r0
	c0 = c0
	rs = rs
	cs = cs
	rr = rr
	r2 = r2
	r3 = r3
	r4 = r4
	theta = theta - lr * rb * r0 * c0 * rs * cs * rr * r2 * r3 * r4
}
