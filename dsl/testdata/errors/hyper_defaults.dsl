// A hyper's default may be an expression of numbers, functions and the
// hypers declared before it.

optimizer hyper_defaults

hyper beta1 = 0.9 in [0, 1)
hyper beta2 = 1 - (1 - beta1) ** 2 in [0, 1)
hyper lr = sqrt(beta2) / 1000
hyper a = b + 1                  // ERROR col=11 "^the default of hyper a may read only hypers declared before it, not b$"
hyper b = b * 2                  // ERROR col=11 "^the default of hyper b may read only hypers declared before it, not b$"
hyper c = t + 1                  // ERROR col=11 "^the default of hyper c may use only numbers and hypers, not built-in t$"
hyper d = 1 in (2, 1)            // ERROR col=16 "^range \(2, 1\) of hyper d is empty$"
hyper e = -beta1 in [2, 1]       // ERROR col=21 "^range \[2, 1\] of hyper e is empty$"
hyper f = beta2 * 2 in [0, 1]    // ERROR col=11 "^default beta2 \* 2 = 1\.98 of hyper f is outside its range \[0, 1\]$"
hyper h = log(beta1 - 0.9)       // ERROR col=11 "^default log\(beta1 - 0\.9\) of hyper h is -Inf: it must be finite$"
state m = 0

step {
	m = beta1 * m + (1 - beta1) * g + a + b + c + d + e + f + h
	theta = theta - lr * m / beta2
}
