# Layout: both comment styles, ';', lines continued after an operator, '('
# or ',', trailing commas, blank lines and odd spacing.
optimizer layout ; hyper lr=1e-3 in(0,inf) ; hyper k = .5 in [ -inf , 1. ]

hyper w = -2E-1 in [-1, 0] # a comment after a declaration
observe two_point(
	a = k,          // one argument a line
	lookahead = 1 /
		(1 + k),    // an operator at the line's end continues it
)

state m=0;state v = lr*

	2   // a blank line may follow the operator

step{m=m*k+
	(1-k)*g ; v = max(v,
	m * m,)
	theta = theta -
	        lr * m /
	        (sqrt(v) + 1e-8) + w * theta}
