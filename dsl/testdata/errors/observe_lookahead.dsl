// A two_point optimizer's step writes the next look-ahead point into a state
// named lookahead, so a declared state may not take that name.

optimizer observe_lookahead

hyper kappa = 0.6
state lookahead = 0 // ERROR col=7 "^state lookahead: observe two_point writes the next look-ahead point into a state of this name \(declared at 9:1\); rename this state$"

observe two_point(a = 1 - kappa, lookahead = 1)

step {
	lookahead = lookahead + g
	theta = theta - lookahead
}
