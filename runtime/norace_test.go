//go:build !race

package runtime_test

// raceEnabled: the tests run under the race detector (race_test.go).
const raceEnabled = false
