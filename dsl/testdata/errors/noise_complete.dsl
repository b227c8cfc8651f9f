// A noise block that leaves a buffer and w unassigned.

optimizer noise_complete

hyper lr = 0.1

noise {             // ERROR col=1 "^the noise block never assigns w, the noise that enters g$"
	buffer s1       // ERROR col=9 "^noise buffer s1 is never updated in the noise block \(it would stay 0\)$"
	buffer s2
	s2 = 0.5 * s2 + z
}

step {
	theta = theta - lr * g
}
