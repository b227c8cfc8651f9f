// The observation's arguments: known, each given once, all given, uniform.
// A newline after a comma continues the list.

optimizer observe_args

hyper kappa = 0.6
state m = 0

observe two_point(       // ERROR col=9 "^observe two_point needs the argument lookahead$"
	a = (1 - kappa) / kappa,
	a = 1,                   // ERROR col=2 "^argument a given twice$"
	look_ahead = 1,          // ERROR col=2 "^observe two_point has no argument look_ahead \(it takes a and lookahead\)$"
	b = theta,               // ERROR col=2 "has no argument b"
)

step {
	m = m + g
	theta = theta - m
}
