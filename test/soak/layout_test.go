package soak

import "fmt"

// slotBytes holds the largest buffer of one operation: maxCount elements of
// 8 bytes. Operation j of a group uses slot j of each rank's buffers.
const slotBytes = maxCount * 8

// firstDiff describes where got and want first differ.
func firstDiff(got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d bytes, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("byte %d of %d: got %#02x, want %#02x", i, len(got), got[i], want[i])
		}
	}
	return "equal"
}
