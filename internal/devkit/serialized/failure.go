package serialized

import (
	"encoding/json"

	"github.com/stormctl/stormctl/internal/engine"
)

// RunFailure reads the runtime's error code and message off a run_failed's
// eventData, as the package stored it: {errorCode, error}, where error is
// {message, stack} (4.x), a string, or the thrown value serialized (5.0:
// core's dehydrateRunError, devalue of an Error through core's "Error"
// reducer, gzipped when the run's spec version compresses). The code is
// errorCode, else the error's own code; a message the error does not hold
// is the error as stored, so that no failure reads as an empty one.
func RunFailure(eventData json.RawMessage) engine.RunFailure {
	var data struct {
		ErrorCode string          `json:"errorCode"`
		Error     json.RawMessage `json:"error"`
	}
	_ = json.Unmarshal(eventData, &data) // not an object: no fields
	f := engine.RunFailure{Code: data.ErrorCode}
	raw := data.Error
	if dec, err := Decode(raw); err == nil {
		raw = dec
	}
	var e struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	}
	if json.Unmarshal(raw, &e) == nil {
		f.Message = e.Message
		if f.Code == "" {
			f.Code = e.Code
		}
	} else {
		_ = json.Unmarshal(raw, &f.Message)
	}
	if f.Message == "" && len(raw) > 0 {
		f.Message = string(raw)
	}
	return f
}
