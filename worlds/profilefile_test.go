package worlds_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormctl/stormctl/internal/eventlog"
	"github.com/stormctl/stormctl/worlds"
)

const goodProfile = `{"schema":1,"source":"a storm","windows":[
 {"type":"step_created","median":2000000,"sigma":0.5,"max":9000000,"source":""},
 {"type":"decision","median":1000000,"sigma":0.4,"max":5000000,"source":"pooled"},
 {"type":"fact","median":1000000,"sigma":0,"max":1000000,"source":"pooled"}]}`

func TestParseProfileFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, wantErr string
	}{
		{"good", goodProfile, ""},
		{"not json", "step_created 2ms", "not a profile file"},
		{"unknown field", `{"schema":1,"windows":[],"extra":1}`, "unknown field"},
		{"two values", goodProfile + " {}", "more than one JSON value"},
		{"schema", strings.Replace(goodProfile, `"schema":1`, `"schema":2`, 1), "schema 2"},
		{"unknown type", strings.Replace(goodProfile, `"step_created"`, `"step_made"`, 1), "neither an event type nor a class"},
		{"duplicate row", strings.Replace(goodProfile, `"type":"fact"`, `"type":"decision"`, 1), "two rows"},
		{"median above max", strings.Replace(goodProfile, `"max":9000000`, `"max":1`, 1), "median"},
		{"zero median", strings.Replace(goodProfile, `"median":2000000`, `"median":0`, 1), "median"},
		{"negative sigma", strings.Replace(goodProfile, `"sigma":0.5`, `"sigma":-1`, 1), "sigma"},
		{"no fact row", strings.Replace(goodProfile, `"type":"fact"`, `"type":"step_completed"`, 1), `no "fact" row`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := worlds.ParseProfileFile([]byte(tt.data), "file:p.json", 3)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.String() != "file:p.json" {
				t.Errorf("String() = %q", p.String())
			}
			rows := p.Windows()
			if len(rows) != 3 || rows[2].Type != "step_created" || rows[2].Source != "a storm" {
				t.Errorf("rows %+v: want 3 sorted, an empty source taken from the file's", rows)
			}
			for range 300 {
				if d := p.Delay(eventlog.StepCreated); d < 0 || d > 9*time.Millisecond {
					t.Fatalf("step_created draw %s outside its row", d)
				}
				if d := p.Delay(eventlog.StepCompleted); d != time.Millisecond {
					t.Fatalf("step_completed draw %s, want the fact row's 1ms (sigma 0)", d)
				}
			}
		})
	}
}

func TestParseProfileReadsAFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "real.json")
	if err := os.WriteFile(path, []byte(goodProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := worlds.ParseProfile("file:"+path, 1)
	if err != nil || p.String() != "file:"+path {
		t.Fatalf("ParseProfile(file:...) = %v, %v", p, err)
	}
	for _, bad := range []string{"file:", "file:" + filepath.Join(t.TempDir(), "absent.json")} {
		if _, err := worlds.ParseProfile(bad, 1); err == nil || !strings.Contains(err.Error(), "--latency") {
			t.Errorf("ParseProfile(%q): err %v, want one naming --latency", bad, err)
		}
	}
}

// FuzzParseProfileFile: a profile file ParseProfileFile refuses gets an
// error; one it accepts draws only windows within [0, its largest max].
func FuzzParseProfileFile(f *testing.F) {
	f.Add([]byte(goodProfile))
	f.Add([]byte(`{"schema":1,"windows":[{"type":"decision","median":1,"max":1},{"type":"fact","median":1,"max":1}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schema":1,"windows":[{"type":"fact","median":1e300,"max":1e300}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := worlds.ParseProfileFile(data, "file:f", 1)
		if err != nil {
			return
		}
		var top time.Duration
		for _, w := range p.Windows() {
			top = max(top, w.Max)
		}
		for _, typ := range eventlog.Types() {
			if d := p.Delay(typ); d < 0 || d > top {
				t.Fatalf("Delay(%s) = %s outside [0, %s]", typ, d, top)
			}
		}
	})
}
