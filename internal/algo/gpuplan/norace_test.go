//go:build !race

package gpuplan

const raceEnabled = false
