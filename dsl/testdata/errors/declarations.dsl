// Declarations that may appear once, and unknown observation kinds.

optimizer declarations
optimizer again               // ERROR col=1 "^duplicate optimizer declaration \(first at 3:1\)$"

observe three_point(a = 1)   // ERROR col=9 "^unknown observation kind three_point \(known: two_point\)$"

step {
	theta = theta - g
}
step {                        // ERROR col=1 "^duplicate step block \(first at 8:1\)$"
	theta = theta + g
}
