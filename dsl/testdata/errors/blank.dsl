// The blank name _ names nothing: it cannot be declared, assigned or read.

optimizer blank

hyper _ = 1                 // ERROR col=7 "^cannot declare _: the blank name names nothing$"
state _ = 0                 // ERROR col=7 "^cannot declare _: the blank name names nothing$"
state m = _ + 1             // ERROR col=11 "^cannot use _ as a value$"
observe two_point(a = 1, lookahead = _) // ERROR col=38 "^cannot use _ as a value$"

step {
	_ = g * 2               // ERROR col=2 "^cannot assign to _: the blank name names nothing \(bind a local and use it\)$"
	m = m + g
	theta = theta - m * _   // ERROR col=22 "^cannot use _ as a value$"
}
