// Precedence and associativity. The golden file shows the canonical form:
// the fewest parentheses that keep the tree.

optimizer precedence

hyper a = 2
hyper b = 3
hyper c = 0.5

state s1 = -a ** 2          // -(a ** 2)
state s2 = (-a) ** 2
state s3 = a ** b ** c      // a ** (b ** c)
state s4 = (a ** b) ** c
state s5 = 2 ** -1          // 2 ** (-1)
state s6 = 2 ** -a ** 2     // 2 ** (-(a ** 2))
state s7 = (a - b) - c      // parentheses dropped
state s8 = a - (b - c)      // parentheses kept
state s9 = a / (b * c)
state s10 = (a / b) * c
state s11 = a - -b
state s12 = - -a
state s13 = -(a + b) * c
state s14 = ((a)) + (((b * c)))
state s15 = max(min(a, sqrt(abs(-b))), max(c, a ** 2))
state s16 = a * (b + c) ** 2 / -(c - a)

step {
	s1 = s1; s2 = s2; s3 = s3; s4 = s4; s5 = s5; s6 = s6; s7 = s7; s8 = s8
	s9 = s9; s10 = s10; s11 = s11; s12 = s12; s13 = s13; s14 = s14; s15 = s15; s16 = s16
	theta = theta - (g ** 2) ** 3 / (1 + g * g) - -g
}
