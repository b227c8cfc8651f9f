// Syntax errors in expressions and statements. A newline ends a statement
// unless the line ends in an operator, '(' or ',': inside parentheses too.
// An error about a newline points at the comment before it, if any.

optimizer syntax_expr

hyper lr = 0.1
state m = (1 + 2               // ERROR col=32 "^expected '\)', found newline$"
state v = 1 + 2)               // ERROR col=16 "^expected newline after declaration, found '\)'$"
state w = max(1 2)             // ERROR col=17 "^expected '\)' or ',' in call, found number 2$"

step {
	m = m +                    // a line ending in an operator goes on
		g
	v = (v                     // ERROR col=29 "^expected '\)', found newline$"
		+ g)                   // ERROR col=3 "^expected assignment \(name = expression\), found '\+': the line before ends the statement"
	w w                        // ERROR col=4 "^expected '=' in assignment, found name w$"
	= w                        // ERROR col=2 "^expected assignment \(name = expression\), found '='$"
	x = * g                    // ERROR col=6 "^expected expression, found '\*'$"
	theta = theta - lr * m; y = 1 2 // ERROR col=32 "^expected newline after assignment, found number 2$"
}
