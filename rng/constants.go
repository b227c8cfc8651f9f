package rng

// The generator's constants, for the code generator that emits the same
// operations into the kernels (package llvmgen), so that they are written
// once, in core.go: Philox4x32's multipliers and key bumps, fdlibm logf's
// coefficients and ln 2 split in two (as float32 bit patterns), Cephes'
// sinf and cosf polynomials (highest degree first), and the step of the
// Box-Muller angle.
const (
	PhiloxM0, PhiloxM1 = philoxM0, philoxM1
	PhiloxW0, PhiloxW1 = philoxW0, philoxW1

	LogLg1Bits, LogLg2Bits, LogLg3Bits, LogLg4Bits = logLg1Bits, logLg2Bits, logLg3Bits, logLg4Bits
	LogLn2HiBits, LogLn2LoBits                     = logLn2HiBits, logLn2LoBits

	AngleStep = angleStep
)

// SinCoefs and CosCoefs are the sine and cosine polynomials' coefficients.
var (
	SinCoefs = [3]float32{sinS3, sinS2, sinS1}
	CosCoefs = [3]float32{cosC3, cosC2, cosC1}
)
