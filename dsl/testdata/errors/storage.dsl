// Storage types: the checker's errors (docs/dsl.md, "Storage types").
optimizer storage
hyper lr = 1e-3 in [0, inf)
state a: bf16 = 0
state b: bf16 stochastic = 0
state c: f32 = 0
state d: f16 stochastic = 0
state e: int8 = 0                // ERROR col=10 "unknown storage type int8: fibergen stores f32, bf16 and f16"
state f: bf16 nearest = 0        // ERROR col=15 "unknown rounding nearest after bf16: write stochastic, or nothing"
state h: f32 stochastic = 0      // ERROR col=14 "stochastic rounding of an f32 state: f32 keeps every value"
state k: = 0                     // ERROR col=10 "expected name, found '='"
step {
	a = a + g
	b = b + g
	c = c + g
	d = d + g
	e = e + g
	f = f + g
	h = h + g
	theta = theta - lr * (a + b + c + d + e + f + h)
}
