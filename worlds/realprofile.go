package worlds

import (
	_ "embed"
	"fmt"
)

// realProfileFile is RealProfile's windows: a profile file that
// `stormctl forensics DIR --derive-latency` wrote from a storm of the
// published @workflow/core 4.8.9 on @workflow/world-postgres 4.3.7 (its
// Source field names the storm and the machine). It is measured input, as
// the seed's two rows are: re-derive it the same way to move it.
//
//go:embed profiles/real.json
var realProfileFile []byte

// realProfile parses realProfileFile into a profile named name.
func realProfile(name string, seed uint64) (Profile, error) {
	p, err := ParseProfileFile(realProfileFile, name, seed)
	if err != nil {
		return nil, fmt.Errorf("the built-in %s profile: %w", RealProfile, err)
	}
	return p, nil
}
