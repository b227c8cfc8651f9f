// States per row and per column: other words for rows and cols (docs/dsl.md,
// "Rows and columns").
optimizer lines_words
hyper lr = 1e-3 in [0, inf)
state c1: columns = 0 // ERROR col=11 "^unknown storage type columns: fibergen stores f32, bf16 and f16 \(did you mean cols, a state per column\?\)$"
state c2: column = 0  // ERROR col=11 "^unknown storage type column: fibergen stores f32, bf16 and f16 \(did you mean cols, a state per column\?\)$"
state c3: col = 0     // ERROR col=11 "^unknown storage type col: fibergen stores f32, bf16 and f16 \(did you mean cols, a state per column\?\)$"
state c4: colss = 0   // ERROR col=11 "^unknown storage type colss: fibergen stores f32, bf16 and f16 \(did you mean cols, a state per column\?\)$"
state c5: f64 = 0     // ERROR col=11 "^unknown storage type f64: fibergen stores f32, bf16 and f16$"
step {
	c1 = c1
	c2 = c2
	c3 = c3
	c4 = c4
	c5 = c5
	theta = theta - lr * c1 * c2 * c3 * c4 * c5
}
