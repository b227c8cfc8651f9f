// States and theta that step never updates, and locals never read.

optimizer unused

hyper lr = 0.1
state m = 0      // ERROR col=7 "^state m is never updated in step$"
state v = 0      // ERROR col=7 "^state v is never updated in step$"
state w = 0

step {           // ERROR col=1 "^step never updates theta$"
	unused = g * 2 // ERROR col=2 "^local unused is bound but never used$"
	w = lr * g
	also = 3        // ERROR col=2 "^local also is bound but never used$"
	bad = nothing   // ERROR col=8 "^undefined: nothing$"
}
