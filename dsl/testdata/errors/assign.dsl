// Assignments to what cannot be assigned, and assignments made twice.

optimizer assign

hyper lr = 0.1
state m = 0

step {
	lr = 0.2            // ERROR col=2 "^cannot assign to hyper lr: hypers are constant during training$"
	g = 2 * g           // ERROR col=2 "^cannot assign to built-in g: it is the privatized gradient"
	t = t + 1           // ERROR col=2 "^cannot assign to built-in t: it is the step index"
	sigma_w2 = 0        // ERROR col=2 "^cannot assign to built-in sigma_w2: it is the DP noise variance"
	sqrt = 1            // ERROR col=2 "^cannot assign to function sqrt$"
	m = g
	m = m + g           // ERROR col=2 "^state m is assigned twice in step \(first at 14:2\)$"
	d = m * lr
	d = d * 2           // ERROR col=2 "^local d is already bound at 16:2; a local is bound once \(use a new name\)$"
	theta = theta - d
}
