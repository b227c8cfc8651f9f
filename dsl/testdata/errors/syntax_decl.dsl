// Syntax errors in declarations. Parsing goes on at the next line.

optimizer syntax_decl

hyper lr 0.1                   // ERROR col=10 "^expected '=' and the hyper's default value, found number 0.1$"
hyper k = * lr                 // ERROR col=11 "^expected expression, found '\*'$"
hyper k2 = 1 in {0, 1}         // ERROR col=17 "^expected '\(' or '\[' to open the range, found '\{'$"
hyper k3 = 1 in (0 1)          // ERROR col=20 "^expected ',' between the range's bounds, found number 1$"
hyper k4 = 1 in (0, x)         // ERROR col=21 "^expected number or inf as a range bound, found name x$"
hyper in = 1                   // ERROR col=7 "^expected name, found keyword in$"
state m 0                      // ERROR col=9 "^expected '=' and the state's initial value, found number 0$"
lr = 2                         // ERROR col=1 "^expected declaration \(optimizer, hyper, state, scalar, observe, noise, step or diagnostic\), found name lr$"
}                              // ERROR col=1 "^unexpected '}' outside step block$"

step {
	theta = theta - g
}
