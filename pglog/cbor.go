package pglog

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// maxDepth bounds the nesting of a CBOR value (a hostile row cannot
// exhaust the stack).
const maxDepth = 200

// errShort is a CBOR value cut off before its end.
var errShort = errors.New("cbor: value cut off")

// toJSON transcodes one CBOR value, as cbor-x encodes JavaScript values,
// into the JSON JSON.stringify would write of the decoded value: maps keep
// their keys' order (a JavaScript object's), a Date (tag 1, epoch seconds)
// becomes its ISO text with milliseconds, undefined becomes null, a byte
// string its base64. Bytes after the value are an error.
func toJSON(b []byte) (json.RawMessage, error) {
	d := decoder{b: b}
	out, err := d.value(nil, 0)
	if err != nil {
		return nil, err
	}
	if d.i != len(b) {
		return nil, fmt.Errorf("cbor: %d bytes after the value", len(b)-d.i)
	}
	return out, nil
}

type decoder struct {
	b []byte
	i int
}

// head reads an item's major type, additional information and argument;
// indefinite says the additional information was 31.
func (d *decoder) head() (major byte, info byte, arg uint64, indefinite bool, err error) {
	if d.i >= len(d.b) {
		return 0, 0, 0, false, errShort
	}
	c := d.b[d.i]
	d.i++
	major, info = c>>5, c&0x1f
	switch {
	case info < 24:
		return major, info, uint64(info), false, nil
	case info == 31:
		return major, info, 0, true, nil
	case info > 27:
		return 0, 0, 0, false, fmt.Errorf("cbor: reserved additional information %d", info)
	}
	n := 1 << (info - 24)
	if len(d.b)-d.i < n {
		return 0, 0, 0, false, errShort
	}
	p := d.b[d.i : d.i+n]
	d.i += n
	switch n {
	case 1:
		arg = uint64(p[0])
	case 2:
		arg = uint64(binary.BigEndian.Uint16(p))
	case 4:
		arg = uint64(binary.BigEndian.Uint32(p))
	default:
		arg = binary.BigEndian.Uint64(p)
	}
	return major, info, arg, false, nil
}

// isBreak consumes a break (0xff) if it is next.
func (d *decoder) isBreak() (bool, error) {
	if d.i >= len(d.b) {
		return false, errShort
	}
	if d.b[d.i] == 0xff {
		d.i++
		return true, nil
	}
	return false, nil
}

// bytes reads a definite string's n bytes.
func (d *decoder) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)-d.i) {
		return nil, errShort
	}
	p := d.b[d.i : d.i+int(n)]
	d.i += int(n)
	return p, nil
}

// str reads a byte or text string (major), definite or in chunks.
func (d *decoder) str(major byte, arg uint64, indefinite bool) ([]byte, error) {
	if !indefinite {
		return d.bytes(arg)
	}
	var out []byte
	for {
		if end, err := d.isBreak(); err != nil || end {
			return out, err
		}
		m, _, n, ind, err := d.head()
		if err != nil {
			return nil, err
		}
		if m != major || ind {
			return nil, errors.New("cbor: bad chunk of an indefinite string")
		}
		p, err := d.bytes(n)
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
}

// value appends the JSON of the next value to out.
func (d *decoder) value(out []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errors.New("cbor: nested too deep")
	}
	major, info, arg, indefinite, err := d.head()
	if err != nil {
		return nil, err
	}
	switch major {
	case 0:
		return strconv.AppendUint(out, arg, 10), nil
	case 1:
		if arg == math.MaxUint64 {
			return append(out, "-18446744073709551616"...), nil
		}
		return append(append(out, '-'), strconv.FormatUint(arg+1, 10)...), nil
	case 2:
		p, err := d.str(major, arg, indefinite)
		if err != nil {
			return nil, err
		}
		return strconv.AppendQuote(out, base64.StdEncoding.EncodeToString(p)), nil
	case 3:
		p, err := d.str(major, arg, indefinite)
		if err != nil {
			return nil, err
		}
		q, _ := json.Marshal(string(p))
		return append(out, q...), nil
	case 4:
		out = append(out, '[')
		for k := uint64(0); indefinite || k < arg; k++ {
			if indefinite {
				if end, err := d.isBreak(); err != nil {
					return nil, err
				} else if end {
					break
				}
			}
			if k > 0 {
				out = append(out, ',')
			}
			if out, err = d.value(out, depth+1); err != nil {
				return nil, err
			}
		}
		return append(out, ']'), nil
	case 5:
		out = append(out, '{')
		for k := uint64(0); indefinite || k < arg; k++ {
			if indefinite {
				if end, err := d.isBreak(); err != nil {
					return nil, err
				} else if end {
					break
				}
			}
			if k > 0 {
				out = append(out, ',')
			}
			key, err := d.value(nil, depth+1)
			if err != nil {
				return nil, err
			}
			if len(key) == 0 || key[0] != '"' {
				// A JavaScript object's keys are strings: 1 is "1".
				q, _ := json.Marshal(string(key))
				key = q
			}
			out = append(append(out, key...), ':')
			if out, err = d.value(out, depth+1); err != nil {
				return nil, err
			}
		}
		return append(out, '}'), nil
	case 6:
		if indefinite {
			return nil, errors.New("cbor: indefinite tag")
		}
		if arg == 1 {
			return d.epoch(out)
		}
		// Any other tag: its content, as cbor-x's decode hands it on.
		return d.value(out, depth+1)
	}
	return d.simple(out, info, arg, indefinite)
}

// epoch reads tag 1's content (seconds since the epoch) as a Date's JSON.
func (d *decoder) epoch(out []byte) ([]byte, error) {
	major, info, arg, indefinite, err := d.head()
	if err != nil {
		return nil, err
	}
	var secs float64
	switch {
	case major == 0:
		secs = float64(arg)
	case major == 1:
		secs = -float64(arg) - 1
	case major == 7 && !indefinite && info >= 25 && info <= 27:
		secs = float(info, arg)
	default:
		return nil, errors.New("cbor: tag 1 without a number")
	}
	if math.IsNaN(secs) || math.IsInf(secs, 0) {
		return append(out, "null"...), nil // JSON.stringify of an invalid Date
	}
	t := time.UnixMilli(int64(math.Round(secs * 1000))).UTC()
	return strconv.AppendQuote(out, t.Format("2006-01-02T15:04:05.000Z")), nil
}

// simple reads major type 7: false, true, null, undefined, floats.
func (d *decoder) simple(out []byte, info byte, arg uint64, indefinite bool) ([]byte, error) {
	switch {
	case indefinite:
		return nil, errors.New("cbor: unexpected break")
	case info == 20:
		return append(out, "false"...), nil
	case info == 21:
		return append(out, "true"...), nil
	case info == 22, info == 23:
		return append(out, "null"...), nil
	case info >= 25 && info <= 27:
		f := float(info, arg)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return append(out, "null"...), nil // as JSON.stringify writes them
		}
		if f == math.Trunc(f) && math.Abs(f) < 1e21 {
			return strconv.AppendFloat(out, f, 'f', -1, 64), nil
		}
		return strconv.AppendFloat(out, f, 'g', -1, 64), nil
	}
	return nil, fmt.Errorf("cbor: simple value %d", arg)
}

// float is the value of a half, single or double float's bits.
func float(info byte, arg uint64) float64 {
	switch info {
	case 25:
		return halfFloat(uint16(arg))
	case 26:
		return float64(math.Float32frombits(uint32(arg)))
	}
	return math.Float64frombits(arg)
}

// halfFloat is an IEEE 754 half-precision float's value.
func halfFloat(h uint16) float64 {
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	var v float64
	switch exp {
	case 0:
		v = math.Ldexp(mant, -24)
	case 31:
		if mant == 0 {
			v = math.Inf(1)
		} else {
			v = math.NaN()
		}
	default:
		v = math.Ldexp(mant+1024, exp-25)
	}
	if h&0x8000 != 0 {
		return -v
	}
	return v
}
