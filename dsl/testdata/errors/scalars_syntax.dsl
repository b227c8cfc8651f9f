// The host block opens step, once, and updates no per-coordinate value.

optimizer scalars_syntax

hyper lr = 0.1
scalar c = 0

step {
	host {
		c = c + 1
		theta = c       // ERROR col=3 "^the host block updates scalars and binds locals; theta is per coordinate: update it in step$"
	}
	host {              // ERROR col=2 "^duplicate host block \(first at 9:2\)$"
		c = 2
	}
	theta = theta - lr * g * c
	host {              // ERROR col=2 "^host \{ \.\.\. \} must come first in step: the host updates the scalars before any coordinate is stepped$"
		c = c + 1
	}
}
