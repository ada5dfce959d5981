package backend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// FrameContentType is the media type of a stream of v4 frames (world-vercel's
// V4_FRAME_CONTENT_TYPE).
const FrameContentType = "application/vnd.workflow.v4-frames"

// Frame is one v4 frame: u32 (big-endian) length of Meta's CBOR, that CBOR,
// u32 length of Body, Body. Meta is structured event metadata; Body is the
// user payload, opaque to the server.
type Frame struct {
	Meta []byte // CBOR
	Body []byte
}

// AppendFrame appends the encoding of a frame of meta (CBOR-encoded here)
// and body to b.
func AppendFrame(b []byte, meta any, body []byte) ([]byte, error) {
	m, err := encMode.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("frame meta: %w", err)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(m)))
	b = append(b, m...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...), nil
}

// ReadFrames splits b into its frames; a frame cut short is an error.
func ReadFrames(b []byte) ([]Frame, error) {
	var out []Frame
	for len(b) > 0 {
		meta, rest, err := chunk(b)
		if err != nil {
			return nil, fmt.Errorf("frame %d: meta: %w", len(out), err)
		}
		body, rest, err := chunk(rest)
		if err != nil {
			return nil, fmt.Errorf("frame %d: body: %w", len(out), err)
		}
		out = append(out, Frame{Meta: meta, Body: body})
		b = rest
	}
	return out, nil
}

var errShort = errors.New("truncated")

// chunk reads one length-prefixed chunk off b.
func chunk(b []byte) (c, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, errShort
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(len(b)-4) < uint64(n) {
		return nil, nil, errShort
	}
	return b[4 : 4+n], b[4+n:], nil
}

// encMode encodes what world-vercel's cbor-x decodes as the backend's
// answers: times as tag 1 (a Date), maps with string keys, byte strings
// (a Uint8Array).
var encMode = func() cbor.EncMode {
	m, err := cbor.EncOptions{Time: cbor.TimeUnixDynamic, TimeTag: cbor.EncTagRequired}.EncMode()
	if err != nil {
		panic(err) // constant options
	}
	return m
}()

// decMode decodes what world-vercel's cbor-x encodes: maps into
// map[string]any (JSON-encodable, as the store keeps them).
var decMode = func() cbor.DecMode {
	m, err := cbor.DecOptions{
		DefaultMapType: reflect.TypeOf(map[string]any(nil)),
		TimeTag:        cbor.DecTagOptional,
	}.DecMode()
	if err != nil {
		panic(err) // constant options
	}
	return m
}()

// Marshal encodes v as the backend's CBOR answers do.
func Marshal(v any) ([]byte, error) { return encMode.Marshal(v) }

// Unmarshal decodes CBOR as the backend reads requests.
func Unmarshal(b []byte, v any) error { return decMode.Unmarshal(b, v) }

// timeOf is t as the wire carries it, nil when zero.
func timeOf(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return *t
}
