// theta, like a state, is assigned exactly once.

optimizer assign_theta

hyper lr = 0.1

step {
	theta = theta - lr * g
	theta = theta * 0.5 // ERROR col=2 "^built-in theta is assigned twice in step \(first at 8:2\)$"
	attenuation = 1     // ERROR col=2 "^cannot assign to function attenuation$"
	min = 2             // ERROR col=2 "^cannot assign to function min$"
}
