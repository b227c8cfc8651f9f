// Names declared twice, or declared like a built-in.

optimizer redeclared

hyper lr = 0.1
hyper lr = 0.2        // ERROR col=7 "^lr redeclared: already declared as hyper at 5:7$"
hyper max = 1         // ERROR col=7 "^max is a built-in name and cannot be redeclared$"
state lr = 0          // ERROR col=7 "^lr redeclared: already declared as hyper at 5:7$"
state m = 0
state m = 1           // ERROR col=7 "^m redeclared: already declared as state at 9:7$"
state g = 0           // ERROR col=7 "^g is a built-in name"
state theta = 0       // ERROR col=7 "^theta is a built-in name"
state t = 0           // ERROR col=7 "^t is a built-in name"
state sigma_w2 = 0    // ERROR col=7 "^sigma_w2 is a built-in name"

step {
	m = m + g
	theta = theta - lr * m
}
