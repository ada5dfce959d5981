package engine

import (
	"encoding/json"
	"testing"
)

func TestFingerprint(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"string", `"a b"`, `"a b"`},
		{"integer", `42`, `42`},
		{"negative", `-7`, `-7`},
		{"float", `1.50`, `1.5`},
		{"exponent", `1e3`, `1000`},
		{"bool and null", `[true,false,null]`, `Array{"0":true,"1":false,"2":null}`},
		{"object keeps key order", `{"b":1,"a":2}`, `{"b":1,"a":2}`},
		{"nested", `{"r":1,"path":"timer","xs":[1,{"k":"v"}]}`, `{"r":1,"path":"timer","xs":Array{"0":1,"1":{"k":"v"}}}`},
		{"empty composites", `[{},[]]`, `Array{"0":{},"1":Array{}}`},
		{"spacing ignored", "{ \"a\" : [ 1 , 2 ] }", `{"a":Array{"0":1,"1":2}}`},
		{"escapes normalized", `"\u0041"`, `"A"`},
		{"malformed is its raw text", `{"a":`, `{"a":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Fingerprint(json.RawMessage(tt.in)); got != tt.want {
				t.Errorf("Fingerprint(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

// call is one call a test program makes: a step with args, a sleep, a hook.
type call struct {
	kind  opKind
	name  string // step name, hook token
	args  string // step args (JSON)
	label string // how the test refers to the id
}

// drawAll draws ids for calls in order from a fresh source of policy p.
func drawAll(p IDPolicy, runID string, calls []call) map[string]string {
	src := newIDSource(p, runID)
	ids := map[string]string{}
	for _, c := range calls {
		scope := waitScope
		switch c.kind {
		case opStep:
			scope = stepScope(c.name, json.RawMessage(c.args))
		case opHook:
			scope = hookScope(c.name)
		case opAttr:
			scope = attrScope
		}
		ids[c.label] = src.draw(c.kind, scope)
	}
	return ids
}

func TestCallsiteScopes(t *testing.T) {
	a1 := call{opStep, "settle", `{"r":0,"b":1}`, "a1"}
	a2 := call{opStep, "settle", `{"r":0,"b":2}`, "a2"}
	a1again := call{opStep, "settle", `{"r":0,"b":1}`, "a1again"}
	b1 := call{opStep, "finalize", `{"r":0,"b":1}`, "b1"}
	w0 := call{opWait, "", "", "w0"}
	w1 := call{opWait, "", "", "w1"}
	hx := call{opHook, "x", "", "hx"}
	hy := call{opHook, "y", "", "hy"}
	tests := []struct {
		name string
		// two call orders of one run; same lists the labels whose ids must
		// agree between them, differ those that must not.
		first, second []call
		same, differ  [][2]string
	}{
		{
			name:   "same name, different args: different ids",
			first:  []call{a1, a2},
			second: []call{a1, a2},
			differ: [][2]string{{"a1", "a2"}},
		},
		{
			name:   "same name, same args twice: ordinals in one scope",
			first:  []call{a1, a1again},
			second: []call{a1, a1again},
			differ: [][2]string{{"a1", "a1again"}},
		},
		{
			name:   "skew in one scope does not rename another",
			first:  []call{a1, a2, b1, hx},
			second: []call{a2, b1, hx, a1},
			same:   [][2]string{{"a1", "a1"}, {"a2", "a2"}, {"b1", "b1"}, {"hx", "hx"}},
		},
		{
			name:   "a step's name is in its scope",
			first:  []call{a1, b1},
			second: []call{a1, b1},
			differ: [][2]string{{"a1", "b1"}},
		},
		{
			name:   "sleeps draw ordinals among sleeps, whatever steps come between",
			first:  []call{w0, a1, w1},
			second: []call{a2, b1, w0, w1},
			same:   [][2]string{{"w0", "w0"}, {"w1", "w1"}},
			differ: [][2]string{{"w0", "w1"}},
		},
		{
			name:   "hooks are scoped by token",
			first:  []call{hx, hy},
			second: []call{hy, hx},
			same:   [][2]string{{"hx", "hx"}, {"hy", "hy"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := drawAll(IDsCallsite, "run-1", tt.first)
			second := drawAll(IDsCallsite, "run-1", tt.second)
			for _, p := range tt.same {
				if first[p[0]] != second[p[1]] {
					t.Errorf("%s in the first order (%s) != %s in the second (%s)", p[0], first[p[0]], p[1], second[p[1]])
				}
			}
			for _, p := range tt.differ {
				if first[p[0]] == first[p[1]] {
					t.Errorf("%s and %s drew one id %s", p[0], p[1], first[p[0]])
				}
			}
		})
	}
}

func TestPositionalIDsFollowWakeOrder(t *testing.T) {
	a1 := call{opStep, "settle", `{"b":1}`, "a1"}
	a2 := call{opStep, "settle", `{"b":2}`, "a2"}
	first := drawAll(IDsPositional, "run-1", []call{a1, a2})
	second := drawAll(IDsPositional, "run-1", []call{a2, a1})
	if first["a1"] != second["a2"] || first["a2"] != second["a1"] {
		t.Fatalf("positional ids should follow draw order: %v vs %v", first, second)
	}
}

func TestIDsDifferPerRun(t *testing.T) {
	for _, p := range []IDPolicy{IDsPositional, IDsCallsite} {
		c := []call{{opStep, "settle", `{}`, "s"}}
		if drawAll(p, "run-1", c)["s"] == drawAll(p, "run-2", c)["s"] {
			t.Errorf("%s: two runs drew one id", p)
		}
	}
}
