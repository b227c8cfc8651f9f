// Undefined names, and locals read before they are bound.

optimizer names

hyper lr = 0.1 in (0, inf)

observe two_point(a = alpha, lookahead = 1) // ERROR col=23 "^undefined: alpha$"

state m = beta // ERROR col=11 "^undefined: beta$"
state v = v2   // ERROR col=11 "^undefined: v2 \(did you mean v\?\)$"
state v2 = 0

step {
	m = m + gamma                   // ERROR col=10 "^undefined: gamma$"
	early = later * 2               // ERROR col=10 "^later is used before it is bound \(bound at 17:2\)$"
	self = self + 1                 // ERROR col=9 "^self is used before it is bound \(bound at 16:2\)$"
	later = g
	v = Theta + v                   // ERROR col=6 "^undefined: Theta \(did you mean theta\?\)$"
	v2 = sigma_w2 * v2 + early
	theta = theta - lr * m
}
