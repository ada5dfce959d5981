package devkitengine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stormctl/stormctl/internal/devkit/node"
	"github.com/stormctl/stormctl/worlds/devkitworld"
)

// Pins returns the package versions channel ch pins for worlds of kind k
// (its embedded package.json's dependencies), by package name.
func Pins(ch Channel, k devkitworld.Kind) (map[string]string, error) {
	b, _, err := node.Manifests(manifestDir(ch, k))
	if err != nil {
		return nil, fmt.Errorf("devkit engine: channel %s has no packages for world-%s", ch, k)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return nil, fmt.Errorf("devkit engine: channel %s: package.json: %w", ch, err)
	}
	return pkg.Dependencies, nil
}

// Support says, for `stormctl worlds`, what the devkit engine runs on the
// world named world: per channel, the pinned core and world package; ""
// for a world it does not run on.
func Support(world string) string {
	k, ok := devkitworld.KindOf(world)
	if !ok {
		return ""
	}
	var parts []string
	for _, ch := range Channels() {
		pins, err := Pins(ch, k)
		if err != nil {
			continue
		}
		var names []string
		for _, name := range []string{"@workflow/core", "@workflow/world-" + string(k)} {
			if v, ok := pins[name]; ok {
				names = append(names, strings.TrimPrefix(name, "@workflow/")+" "+v)
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", ch, strings.Join(names, ", ")))
	}
	return "devkit: " + strings.Join(parts, "; ")
}
