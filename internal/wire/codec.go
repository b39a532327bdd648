package wire

import "encoding/binary"

// enc appends little-endian fields to a buffer.
type enc struct{ b []byte }

func (e *enc) u8(v uint8)   { e.b = append(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) raw(p []byte) { e.b = append(e.b, p...) }
func (e *enc) bytes(p []byte) {
	e.u32(uint32(len(p)))
	e.raw(p)
}
func (e *enc) boolean(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// dec reads fields from a buffer, remembering the first error: after one,
// every read returns zero values, so a decoder checks err once at the end.
type dec struct {
	b   []byte
	msg string
	err error
}

func (d *dec) fail(format string, a ...any) {
	if d.err == nil {
		d.err = corrupt(d.msg, format, a...)
	}
}

func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail("needs %d more bytes, %d left", n, len(d.b))
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *dec) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (d *dec) boolean() bool {
	switch v := d.u8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("boolean byte %d", v)
		return false
	}
}

// bytes reads a length-prefixed byte string of at most max bytes; it copies,
// so the result does not alias the frame.
func (d *dec) bytes(max int) []byte {
	if p := d.view(max); p != nil {
		return append([]byte{}, p...)
	}
	return nil
}

// view is bytes without the copy: the result aliases the frame (its
// capacity ends with it, so an append cannot overwrite what follows).
func (d *dec) view(max int) []byte {
	n := d.u32()
	if d.err == nil && int64(n) > int64(max) {
		d.fail("field of %d bytes exceeds its limit of %d", n, max)
	}
	p := d.take(int(n))
	return p[:len(p):len(p)]
}

func (d *dec) str(max int) string { return string(d.bytes(max)) }

func (d *dec) key() (k [16]byte) {
	copy(k[:], d.take(16))
	return k
}

// count reads a list length, bounded by max and by what is left in the
// buffer at minSize bytes per entry.
func (d *dec) count(max, minSize int) int {
	n := d.u32()
	if d.err == nil && (int64(n) > int64(max) || int64(n)*int64(minSize) > int64(len(d.b))) {
		d.fail("list of %d entries does not fit (limit %d, %d bytes left)", n, max, len(d.b))
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

// done checks that the whole buffer was consumed.
func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	return d.err
}

func newDec(msg string, b []byte) *dec { return &dec{b: b, msg: msg} }
