// Hyper defaults must lie in their ranges; ranges must not be empty.

optimizer ranges

hyper a = 2 in (2, 3)          // ERROR col=11 "^default 2 of hyper a is outside its range \(2, 3\)$"
hyper b = 3 in [2, 3)          // ERROR col=11 "^default 3 of hyper b is outside its range \[2, 3\)$"
hyper c = 1.5 in [2, 3]        // ERROR col=11 "^default 1.5 of hyper c is outside its range \[2, 3\]$"
hyper d = -1e-3 in (0, inf)    // ERROR col=11 "^default -1e-3 of hyper d is outside its range \(0, inf\)$"
hyper e = 1 in (-inf, 0]       // ERROR col=11 "^default 1 of hyper e is outside its range \(-inf, 0\]$"
hyper f = 1 in (1, 1]          // ERROR col=16 "^range \(1, 1\] of hyper f is empty$"
hyper h = 1 in [2, 1]          // ERROR col=16 "^range \[2, 1\] of hyper h is empty$"
hyper i = 1 in [1, 1)          // ERROR col=16 "^range \[1, 1\) of hyper i is empty$"
hyper ok1 = 1 in [1, 1]
hyper ok2 = -5 in (-inf, inf)
hyper ok3 = 0 in [0, inf]
hyper ok4 = 3 in [2, 3]
hyper ok5 = 1e300

step {
	theta = theta - (a + b + c + d + e + f + h + i + ok1 + ok2 + ok3 + ok4 + ok5) * g
}
