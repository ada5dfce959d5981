package flagspec_test

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/stormctl/stormctl/internal/base/flagspec"
)

// TestValue: a declared flag reads and writes its value in Values, starts
// at its default, and shows in --help as a pflag string flag would.
func TestValue(t *testing.T) {
	t.Parallel()
	specs := []flagspec.String{
		{Name: "url", Help: "a server"},
		{Name: "channel", Help: "a channel", Default: "latest"},
	}
	v := flagspec.Values{}
	fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
	for _, s := range specs {
		fl.Var(flagspec.NewValue(s, v), s.Name, s.Help)
	}
	twin := pflag.NewFlagSet("t", pflag.ContinueOnError)
	twin.String("url", "", "a server")
	twin.String("channel", "latest", "a channel")
	if got, want := fl.FlagUsages(), twin.FlagUsages(); got != want {
		t.Errorf("--help\n%s\nwant, as pflag's own string flags\n%s", got, want)
	}
	if want := (flagspec.Values{"channel": "latest"}); !maps.Equal(v, want) {
		t.Errorf("before parsing: %v, want %v", v, want)
	}
	if err := fl.Parse([]string{"--url", "http://h:1", "--channel", "next"}); err != nil {
		t.Fatal(err)
	}
	if want := (flagspec.Values{"url": "http://h:1", "channel": "next"}); !maps.Equal(v, want) {
		t.Errorf("parsed: %v, want %v", v, want)
	}
	if !fl.Changed("url") || fl.Lookup("channel").DefValue != "latest" {
		t.Errorf("pflag does not see the flags as declared: changed %v, default %q", fl.Changed("url"), fl.Lookup("channel").DefValue)
	}
}

// TestValidate: only values given are checked, in the order of the specs;
// the first refusal is returned.
func TestValidate(t *testing.T) {
	t.Parallel()
	refuse := func(name string) func(string) error {
		return func(v string) error { return errors.New("--" + name + " " + v + ": no") }
	}
	specs := []flagspec.String{
		{Name: "a", Validate: refuse("a")},
		{Name: "b"},
		{Name: "c", Validate: refuse("c")},
	}
	tests := []struct {
		v    flagspec.Values
		want string
	}{
		{flagspec.Values{}, ""},
		{flagspec.Values{"a": "", "b": "anything"}, ""},
		{flagspec.Values{"c": "x"}, "--c x: no"},
		{flagspec.Values{"c": "x", "a": "y"}, "--a y: no"},
		{flagspec.Values{"unknown": "z"}, ""},
	}
	for _, tc := range tests {
		err := flagspec.Validate(specs, tc.v)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Validate(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestClone: a clone can change without changing the original.
func TestClone(t *testing.T) {
	t.Parallel()
	v := flagspec.Values{"a": "1"}
	c := v.Clone()
	c["a"], c["b"] = "2", "3"
	if v["a"] != "1" || len(v) != 1 {
		t.Errorf("changing the clone changed the original: %v", v)
	}
	if flagspec.Values(nil).Clone() != nil {
		t.Error("a nil clone is not nil")
	}
	if s := (&flagspec.Value{}).Set("x"); s == nil || !strings.Contains(s.Error(), "no values") {
		t.Errorf("Set on a Value without Values = %v, want an error", s)
	}
}
