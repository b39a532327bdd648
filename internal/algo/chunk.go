package algo

// Span is a range of elements [Off, Off+Len).
type Span struct{ Off, Len int }

// AlignBytes is the byte alignment chunk boundaries keep where the count
// allows it, so that vectorised reductions start on aligned addresses.
const AlignBytes = 16

// alignElems is the number of elements in AlignBytes (at least 1).
func alignElems(elemSize int) int {
	if elemSize <= 0 || elemSize >= AlignBytes {
		return 1
	}
	return AlignBytes / elemSize
}

// Split cuts count elements into parts consecutive spans as evenly as the
// alignment allows: every boundary but the end is a multiple of align
// elements, spans differ by at most align elements, and trailing spans may be
// empty when count is small. count 0 gives parts empty spans.
func Split(count, parts, align int) []Span {
	if parts <= 0 {
		return nil
	}
	if align < 1 {
		align = 1
	}
	units := (count + align - 1) / align
	spans := make([]Span, parts)
	off := 0
	for i := range spans {
		u := units / parts
		if i < units%parts {
			u++
		}
		n := min(u*align, count-off)
		spans[i] = Span{off, n}
		off += n
	}
	return spans
}

// NumPieces is how many pipeline pieces a block of count elements of
// elemSize bytes is cut into so that no piece exceeds chunkBytes.
func NumPieces(count, elemSize, chunkBytes int) int {
	bytes := count * elemSize
	if chunkBytes <= 0 || bytes <= chunkBytes {
		return 1
	}
	return (bytes + chunkBytes - 1) / chunkBytes
}
