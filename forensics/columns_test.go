package forensics_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stormctl/stormctl/forensics"
)

// TestFindingColumnsAreTheJSONs: every finding column names a key of
// RunFindings' JSON and reads the field the JSON keeps under it, and every
// count of RunFindings has a column.
func TestFindingColumnsAreTheJSONs(t *testing.T) {
	var f forensics.RunFindings
	v := reflect.ValueOf(&f).Elem()
	counts := map[string]int{}
	for i := range v.NumField() {
		if v.Field(i).Kind() == reflect.Int {
			v.Field(i).SetInt(int64(i + 1)) // each field its own value
			counts[v.Type().Field(i).Name] = i + 1
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var keyed map[string]any
	if err := json.Unmarshal(b, &keyed); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, c := range forensics.FindingColumns() {
		got, ok := keyed[c.JSON]
		if !ok {
			t.Errorf("column %q: RunFindings' JSON has no key %q", c.Name, c.JSON)
			continue
		}
		if want := int(got.(float64)); c.Of(f) != want {
			t.Errorf("column %q reads %d, the JSON's %q holds %d", c.Name, c.Of(f), c.JSON, want)
		}
		seen[c.Of(f)] = true
	}
	for name, n := range counts {
		if !seen[n] {
			t.Errorf("RunFindings.%s has no finding column", name)
		}
	}
}

func TestColumnsByName(t *testing.T) {
	got := forensics.Columns("gaps", "reads")
	if len(got) != 2 || got[0].Name != "gaps" || got[1].Name != "reads" {
		t.Errorf("Columns(gaps, reads) = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown column did not panic")
		}
	}()
	forensics.Columns("nonesuch")
}
