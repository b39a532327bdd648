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

// ZeroCopyBlockBytes is the size of the blocks a zero-copy reduction
// accumulates in a private buffer before storing them: small enough to stay
// in the core's cache while every peer's input is folded in.
const ZeroCopyBlockBytes = 64 << 10

// Slices divides the work of a zero-copy collective of count elements
// between nranks ranks: rank r reduces (or copies) slice r of every buffer.
// Boundaries are aligned to AlignBytes where the count allows it, so every
// rank's vectorised loops start aligned; trailing slices may be empty.
func Slices(count, nranks, elemSize int) []Span {
	return Split(count, nranks, alignElems(elemSize))
}

// Blocks cuts a span of elements into consecutive blocks of at most
// blockBytes (at least one element each), for cache-sized passes.
func Blocks(s Span, elemSize, blockBytes int) []Span {
	if s.Len == 0 {
		return nil
	}
	per := max(1, blockBytes/elemSize)
	if a := alignElems(elemSize); per > a {
		per -= per % a
	}
	out := make([]Span, 0, (s.Len+per-1)/per)
	for off := 0; off < s.Len; off += per {
		out = append(out, Span{s.Off + off, min(per, s.Len-off)})
	}
	return out
}
