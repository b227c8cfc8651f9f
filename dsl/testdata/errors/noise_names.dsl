// The noise block's names stay its own; its buffers are updated once, in
// it; it reads no schedule.

optimizer noise_names

hyper lr = 0.1
state m = 0
scalar k = 0

noise {
	buffer s1
	buffer m            // ERROR col=9 "^m redeclared: already declared as state at 7:7$"
	f = k + s1          // ERROR col=6 "^the noise block may read only z, its buffers, its locals, numbers and hypers, not scalar k: the noise filter must stay the same over training"
	m = s1              // ERROR col=2 "^the noise block assigns its buffers, w and its own locals, not state m$"
	w = z - f
	s1 = 0.5 * s1 + z
	s1 = s1             // ERROR col=2 "^noise buffer s1 is assigned twice in the noise block \(first at 16:2\)$"
	buffer late         // ERROR col=2 "^buffer declarations come first in the noise block, before its statements$"
}

noise {             // ERROR col=1 "^duplicate noise block \(first at 10:1\)$"
}

step {
	host {
		k = k + 1
	}
	m = 0.9 * m + g + s1 // ERROR col=20 "^privacy: step cannot read s1, a noise buffer of the noise block: the noise must stay secret, and reaches the step only inside g$"
	s1 = g               // ERROR col=2 "^noise buffer s1 is updated in the noise block, not in step$"
	theta = theta - lr * m - f // ERROR col=27 "^privacy: step cannot read f, a local of the noise block"
}
