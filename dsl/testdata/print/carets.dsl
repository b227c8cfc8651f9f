// Errors in tab-indented code: the carets must line up in the output of
// fibergen check.
optimizer carets

hyper lr = 0.1 in (0, 1
state m = 0  # a comment

step {
	m = m + undefined_name
	x = (g  // the error is at the comment, past "x = (g"
	  	y = 1 ** 2 + g ** lr
	theta = theta - lr * m / 0
}
