//go:build race

package runtime_test

// raceEnabled: the tests run under the race detector, where the privacy
// accountant's compositions cost about ten times as much.
const raceEnabled = true
