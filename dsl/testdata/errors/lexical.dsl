// Characters and numbers the scanner rejects.

optimizer lexical

state a = 1 @ 2                // ERROR col=13 "^unexpected character '@'$"
state b = λ                    // ERROR col=11 "^unexpected character 'λ'$"
state c = 1 � 2                 // ERROR col=13 "^invalid UTF-8 byte 0xff$"
state d = "1"                  // ERROR col=11 "^unexpected character '.'$"
state e = 1e                   // ERROR col=11 "^malformed number .1e.: exponent has no digits$"
state f = 1e+                  // ERROR col=11 "^malformed number .1e\+.: exponent has no digits$"
state h = 1e999                // ERROR col=11 "^number 1e999 is out of range for float64$"
state i = 2x                   // ERROR col=12 "^unexpected 'x' after number$"
state j = .5 + 1. + 1.e3 + 1E+2 + 0.0e-0 + 1e-400

step {
	a = a; b = b; c = c; d = d; e = e; f = f; h = h; i = i; j = j
	theta = theta - g
}
