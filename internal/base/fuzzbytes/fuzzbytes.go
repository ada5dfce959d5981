// Package fuzzbytes draws small numbers from a fuzzer's input, so that a
// fuzz test can build a structured value of any shape (how many events,
// which type, which actor) from one []byte.
package fuzzbytes

// Reader hands out a fuzz input's bytes one at a time.
type Reader struct {
	data []byte
}

// New returns a Reader over data.
func New(data []byte) *Reader { return &Reader{data: data} }

// Int returns the next byte as a number from 0 to 255, and 0 once the
// input is used up, so that every input decodes to some value.
func (r *Reader) Int() int {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return int(b)
}

// Len returns how many bytes are left to draw.
func (r *Reader) Len() int { return len(r.data) }
