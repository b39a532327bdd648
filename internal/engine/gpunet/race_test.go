//go:build race

package gpunet

const raceEnabled = true
