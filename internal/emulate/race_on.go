//go:build race

package emulate

// raceDetector: this program runs under the race detector (see Builder).
const raceDetector = true
