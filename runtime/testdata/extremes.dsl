// Per-tensor max and min (TestReduceExtremes): each state holds its
// tensor's extreme after a step, so the test reads them back. peak reads
// theta alone; low reads g, so the reduction pass privatizes g and keeps
// it for the step; signed is the max of ±0 (theta's signs), whose sign
// only the order of the fold decides.

optimizer extremes

hyper lr = 0.01

state peak = 0
state low = 0
state signed = 0

step {
	peak = max(abs(theta))
	low = min(g - theta)
	signed = max(theta * 0)
	theta = theta - lr * g * peak / (1 + abs(low))
}
