package serialized

import (
	"strconv"
	"strings"
)

// SlotOf reads the position of a slot id (spec 6 on: "evnt_" and the dense
// position the world allocated, as digits); ok is false for any other id
// (a ULID).
func SlotOf(id string) (pos int64, ok bool) {
	rest, found := strings.CutPrefix(id, "evnt_")
	if !found || rest == "" {
		return 0, false
	}
	// A ULID of digits only would be minted before 1971: a position.
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n > 0 && (len(rest) != 26 || strings.HasPrefix(rest, "00000"))
}
