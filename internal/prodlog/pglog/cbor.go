package pglog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// maxDepth bounds the nesting of a CBOR value (a hostile row cannot
// exhaust the stack): arrays, maps and tags together.
const maxDepth = 200

// decMode decodes a row's payload_cbor as cbor-x encodes JavaScript
// values: indefinite lengths allowed, text that is not UTF-8 kept (as
// JSON.stringify would write the JavaScript string: with replacement
// characters), a Date (tag 1) as a time.Time, any other tag as its
// content, and a map into map[any]any whose keys toJSONValue names.
var decMode = func() cbor.DecMode {
	dm, err := cbor.DecOptions{
		MaxNestedLevels:      maxDepth,
		MaxArrayElements:     math.MaxInt32,
		MaxMapPairs:          math.MaxInt32,
		IndefLength:          cbor.IndefLengthAllowed,
		UTF8:                 cbor.UTF8DecodeInvalid,
		UnrecognizedTagToAny: cbor.UnrecognizedTagContentToAny,
		TimeTagToAny:         cbor.TimeTagToTime,
		DupMapKey:            cbor.DupMapKeyQuiet,
	}.DecMode()
	if err != nil {
		panic(fmt.Sprintf("pglog: CBOR decoding options: %v", err)) // constant options: a programming error
	}
	return dm
}()

// toJSON transcodes one CBOR value, as cbor-x encodes JavaScript values,
// into the JSON JSON.stringify would write of the decoded value, keys in
// sorted order (a jsonb column reorders them too; no reader of a payload
// depends on its keys' order): a Date (tag 1, epoch seconds) becomes its
// ISO text with milliseconds, undefined, NaN and infinities become null, a
// byte string its base64, a map key that is not a string the text of its
// value. Bytes after the value are an error.
func toJSON(b []byte) (json.RawMessage, error) { return transcode(b, false) }

// toPackageJSON transcodes one CBOR value as toJSON does, except that a
// byte string (a Uint8Array: the runtime's serialized values) becomes
// {"__type":"Uint8Array","data":base64}, as world-local's files hold one
// and the runtime's replay host revives it.
func toPackageJSON(b []byte) (json.RawMessage, error) { return transcode(b, true) }

// transcode is toJSON, and with bytesTyped toPackageJSON.
func transcode(b []byte, bytesTyped bool) (json.RawMessage, error) {
	var v any
	if err := decMode.Unmarshal(b, &v); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("cbor: value cut off (%w)", err)
		}
		return nil, err // the package's errors say "cbor: ..."
	}
	jv, err := toJSONValue(v, bytesTyped)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(jv)
	if err != nil {
		return nil, fmt.Errorf("cbor: %w", err)
	}
	return out, nil
}

// toJSONValue turns a decoded CBOR value into one encoding/json writes as
// JSON.stringify writes the JavaScript value cbor-x decodes it to. The
// decoder bounds the nesting, so the recursion is bounded too.
func toJSONValue(v any, bytesTyped bool) (any, error) {
	switch x := v.(type) {
	case []byte:
		if bytesTyped {
			return map[string]any{"__type": "Uint8Array", "data": x}, nil // []byte marshals as base64
		}
		return x, nil
	case nil, bool, string, int64, uint64:
		return x, nil
	case *big.Int:
		return json.Number(x.String()), nil
	case big.Int:
		return json.Number(x.String()), nil
	case float32:
		return toJSONValue(float64(x), bytesTyped)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, nil // as JSON.stringify writes them
		}
		return x, nil
	case time.Time:
		if x.IsZero() {
			return nil, nil
		}
		return x.UTC().Round(time.Millisecond).Format("2006-01-02T15:04:05.000Z"), nil
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			var err error
			if out[i], err = toJSONValue(y, bytesTyped); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, y := range x {
			key, err := keyText(k, bytesTyped)
			if err != nil {
				return nil, err
			}
			if out[key], err = toJSONValue(y, bytesTyped); err != nil {
				return nil, err
			}
		}
		return out, nil
	case cbor.SimpleValue:
		return nil, fmt.Errorf("cbor: simple value %d", x)
	}
	return nil, fmt.Errorf("cbor: a value of Go type %s has no JSON", reflect.TypeOf(v))
}

// keyText is a map key as a JavaScript object holds it: a string as is,
// anything else as the text of its JSON (1 is "1").
func keyText(k any, bytesTyped bool) (string, error) {
	if s, ok := k.(string); ok {
		return s, nil
	}
	jv, err := toJSONValue(k, bytesTyped)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(jv)
	if err != nil {
		return "", fmt.Errorf("cbor: map key: %w", err)
	}
	return string(b), nil
}
