package worlds

import (
	"errors"

	"github.com/stormctl/stormctl/eventlog"
)

func asFenced(err error) (*eventlog.FencedError, bool) {
	var fe *eventlog.FencedError
	ok := errors.As(err, &fe)
	return fe, ok
}
