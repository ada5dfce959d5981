package serialized

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// The runtime keeps a run's input, output, step results and hook payloads
// serialized: "devl" and the devalue format (github.com/Rich-Harris/devalue:
// a JSON array of values whose containers refer to other values by index,
// the root first), as bytes the host writes as {"__type":"Uint8Array",
// "data": base64}. Decode turns such a value into the plain JSON the
// scenario checks read.

// devaluePrefix starts every value core 4.x serializes with devalue.
const devaluePrefix = "devl"

// devalue's sentinels for values JSON has no word for.
const (
	dvUndefined = -1
	dvHole      = -2
	dvNaN       = -3
	dvPosInf    = -4
	dvNegInf    = -5
	dvNegZero   = -6
)

// errDevalue is wrapped by the errors of a value that does not decode.
var errDevalue = errors.New("not a devalue value")

// Decode returns raw as plain JSON: a serialized value of the runtime
// decoded, anything else as it is.
func Decode(raw json.RawMessage) (json.RawMessage, error) {
	var bin struct {
		Type string `json:"__type"`
		Data string `json:"data"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &bin) != nil || bin.Type != "Uint8Array" {
		return raw, nil
	}
	b, err := base64.StdEncoding.DecodeString(bin.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %v", errDevalue, err)
	}
	return decodeBytes(raw, b, 0)
}

// gzipPrefix starts a value 5.0 compressed: gzip of a serialized value.
const gzipPrefix = "gzip"

// decodeBytes decodes serialized bytes b (raw as the host wrote them):
// devalue, or gzip of a serialized value.
func decodeBytes(raw json.RawMessage, b []byte, depth int) (json.RawMessage, error) {
	if rest, ok := bytes.CutPrefix(b, []byte(gzipPrefix)); ok && depth < 2 {
		zr, err := gzip.NewReader(bytes.NewReader(rest))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", errDevalue, err)
		}
		inner, err := io.ReadAll(io.LimitReader(zr, 64<<20))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", errDevalue, err)
		}
		return decodeBytes(raw, inner, depth+1)
	}
	rest, ok := bytes.CutPrefix(b, []byte(devaluePrefix))
	if !ok {
		return raw, nil // bytes of another kind: kept as the host wrote them
	}
	v, err := unflatten(rest)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// unflatten decodes devalue's flat array (or a bare sentinel) into plain values (objects, arrays,
// strings, numbers, booleans, nil). Dates are their strings; Sets arrays;
// Maps arrays of [key, value]; NaN, infinities and undefined are nil; a
// custom type ([tag, i]) the value its reducer made; other tagged values
// {"$type": tag, "value": [...]}.
func unflatten(b []byte) (any, error) {
	var sentinel int
	if json.Unmarshal(b, &sentinel) == nil {
		// A top-level undefined, NaN, infinity or -0 is its bare sentinel
		// (devalue's stringify gives "-1" for undefined), not an array.
		return devalueDecoder{}.hydrate(sentinel, 0)
	}
	var values []json.RawMessage
	if err := json.Unmarshal(b, &values); err != nil {
		return nil, fmt.Errorf("%w: %v", errDevalue, err)
	}
	if len(values) == 0 {
		return nil, nil
	}
	d := devalueDecoder{values: values}
	return d.hydrate(0, 0)
}

type devalueDecoder struct{ values []json.RawMessage }

// maxDepth bounds the nesting a value may have (a cycle never ends).
const maxDepth = 256

func (d devalueDecoder) hydrate(i, depth int) (any, error) {
	switch {
	case depth > maxDepth:
		return nil, fmt.Errorf("%w: nested deeper than %d", errDevalue, maxDepth)
	case i == dvNegZero:
		return math.Copysign(0, -1), nil
	case i < 0:
		return nil, nil // undefined, a hole, NaN, an infinity
	case i >= len(d.values):
		return nil, fmt.Errorf("%w: index %d of %d values", errDevalue, i, len(d.values))
	}
	raw := d.values[i]
	switch {
	case len(raw) > 0 && raw[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("%w: %v", errDevalue, err)
		}
		var tag string
		if len(items) > 0 && json.Unmarshal(items[0], &tag) == nil {
			return d.tagged(tag, items[1:], depth)
		}
		out := make([]any, 0, len(items))
		for _, it := range items {
			v, err := d.ref(it, depth)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case len(raw) > 0 && raw[0] == '{':
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, fmt.Errorf("%w: %v", errDevalue, err)
		}
		out := make(map[string]any, len(fields))
		for k, it := range fields {
			var idx int
			if err := json.Unmarshal(it, &idx); err != nil {
				return nil, fmt.Errorf("%w: field %q: %v", errDevalue, k, err)
			}
			if idx == dvUndefined {
				continue // JSON drops an undefined field
			}
			v, err := d.hydrate(idx, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", errDevalue, err)
	}
	return v, nil
}

// ref hydrates the value an array item refers to.
func (d devalueDecoder) ref(it json.RawMessage, depth int) (any, error) {
	var idx int
	if err := json.Unmarshal(it, &idx); err != nil {
		return nil, fmt.Errorf("%w: %v", errDevalue, err)
	}
	return d.hydrate(idx, depth+1)
}

// tagged decodes a value devalue writes as [tag, ...].
func (d devalueDecoder) tagged(tag string, args []json.RawMessage, depth int) (any, error) {
	switch tag {
	case "Date", "BigInt", "RegExp", "URL":
		var s string
		if len(args) > 0 {
			_ = json.Unmarshal(args[0], &s)
		}
		return s, nil
	case "Object":
		if len(args) == 0 {
			return nil, nil
		}
		var v any
		if err := json.Unmarshal(args[0], &v); err != nil {
			return nil, fmt.Errorf("%w: %v", errDevalue, err)
		}
		return v, nil
	case "null":
		obj := map[string]any{}
		for i := 0; i+1 < len(args); i += 2 {
			var k string
			if err := json.Unmarshal(args[i], &k); err != nil {
				return nil, fmt.Errorf("%w: a key of a null-prototype object: %v", errDevalue, err)
			}
			v, err := d.ref(args[i+1], depth)
			if err != nil {
				return nil, err
			}
			obj[k] = v
		}
		return obj, nil
	case "Set", "Map":
		var out []any
		for _, a := range args {
			v, err := d.ref(a, depth)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if tag == "Map" {
			var pairs []any
			for i := 0; i+1 < len(out); i += 2 {
				pairs = append(pairs, []any{out[i], out[i+1]})
			}
			return pairs, nil
		}
		return out, nil
	}
	if len(args) == 1 {
		// A custom type: devalue writes what the runtime's reducer of tag
		// made of the value ([tag, i], the reduced value at i: an Error's
		// {name, message, stack, cause?} under "Error"), read here as the
		// host reads it (revivers that keep the reduced value).
		var i int
		if json.Unmarshal(args[0], &i) == nil {
			return d.hydrate(i, depth+1)
		}
	}
	var raw []any
	for _, a := range args {
		var v any
		_ = json.Unmarshal(a, &v)
		raw = append(raw, v)
	}
	return map[string]any{"$type": tag, "value": raw}, nil
}
