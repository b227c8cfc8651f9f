// Aliases: the names a binding accepts for a hyper besides its own
// (alias weight_decay), or the hyper as an element of a sequence (betas[0]).

optimizer aliases

hyper lr = 1e-3 in [0, inf) alias learning_rate
hyper b1 = 0.9 in [0, 1) alias betas[0]
hyper b2 = 0.999 in [0, 1) alias betas[1]
hyper wd = 0 alias weight_decay
hyper a = 1 alias lr                     // ERROR col=19 "^alias lr of hyper a is the name of a hyper$"
hyper c = 1 alias weight_decay           // ERROR col=19 "^alias weight_decay of hyper c is hyper wd's alias too \(an alias names one hyper"
hyper d = 1 alias betas[1]               // ERROR col=24 "^alias betas\[1\] of hyper d is hyper b2's alias too$"
hyper e = 1 alias gaps[1]                // ERROR col=23 "^alias gaps\[1\] of hyper e leaves gaps\[0\] to no hyper"
hyper f = 1 alias mixed
hyper h = 1 alias mixed[0]               // ERROR col=19 "^alias mixed\[0\] of hyper h is hyper f's alias too"
hyper i = 1 alias big[99]                // ERROR col=23 "^alias index 99: want a whole number from 0 to 15$"
hyper k = 1 alias open[0                 // ERROR col=42 "^expected '\]' after the alias's index, found newline$"
hyper l = 1 alias step                   // ERROR col=19 "^expected name, found keyword step$"

step {
	theta = theta - (lr + b1 + b2 + wd + a + c + d + e + f + h + i + k + l) * g
}
