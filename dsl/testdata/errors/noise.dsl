// The noise block (docs/dsl.md, "Correlated noise"): what it may read and
// assign, and linearity.

optimizer noise_errors

hyper lr = 0.1
state m = 0

noise {
	buffer s1
	buffer w            // ERROR col=9 "^buffer w: in the noise block, z is the fresh draw and w the noise it defines; name the buffer otherwise$"
	a = z * s1          // ERROR col=8 "^z \* s1 multiplies two noise values: the noise block must be linear in z and its buffers"
	b = s1 / z          // ERROR col=9 "^s1 / z divides by a noise value: the noise block must be linear"
	c = sqrt(s1)        // ERROR col=6 "^sqrt\(s1\) applies sqrt to a noise value: the noise block must be linear"
	d = g               // ERROR col=6 "^privacy: the noise block may read only z, its buffers, its locals, numbers and hypers, not built-in g: the noise must not depend on the data or the model$"
	e = m + t           // ERROR col=6 "^privacy: the noise block may read only z, its buffers, its locals, numbers and hypers, not state m"
	z = 1               // ERROR col=2 "^cannot assign to z: it is the step's fresh standard normal draw$"
	w = z + a + b + c - lr * s1
	s1 = 0.5 * s1 + z + w // ERROR col=22 "^the noise block cannot read w, the noise it defines"
}

step {
	m = 0.9 * m + g
	theta = theta - lr * m
}
