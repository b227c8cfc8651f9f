// A noise block that leaves a buffer and w unassigned.

optimizer noise_complete

hyper lr = 0.1

noise {             // ERROR col=1 "^the noise block never assigns w, the noise that enters g$"
	buffer s1       // ERROR col=9 "^noise buffer s1 is never updated in the noise block \(it would stay 0\)$"
	buffer s2
	buffer s3
	buffer s5
	buffer = 2 * s3     // a local named buffer
	s2 = 0.5 * s2 + z + buffer
	s3 = 0.5 * s3 + 1   // ERROR col=16 "^0.5 \* s3 \+ 1 adds a term without noise: the noise block must be linear"
	s5 = lr             // ERROR col=7 "^s5 = lr reads neither z nor a buffer: the noise block's w and buffers are linear in them, without a constant term$"
	s4 = attenuation(s2) // ERROR col=7 "^the noise block cannot use attenuation: the noise gain of a state is known only inside step$"
}

step {
	theta = theta - lr * g
}
