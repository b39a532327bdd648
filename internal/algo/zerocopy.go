package algo

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
