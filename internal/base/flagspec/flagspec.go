// Package flagspec declares command-line flags where their owner lives (a
// world's endpoint, an engine's setting), so that the command line
// registers, validates and documents them without knowing whose they are:
// the owner writes a String once (name, help, default, validation) and the
// command line turns it into a flag whose value lands in Values.
package flagspec

import "fmt"

// String declares a string flag.
type String struct {
	// Name is the flag's name, without dashes.
	Name string
	// Help is its --help line.
	Help string
	// Default is its value when not given ("" shows no default in --help).
	Default string
	// Validate checks a value given (never ""), before anything is opened;
	// its error starts with the flag ("--pg-url: ...") and shows no secret
	// of the value. nil: any value.
	Validate func(v string) error
}

// Values are declared flags' values by name (without dashes); a name
// absent is a flag not given (its value "").
type Values map[string]string

// Clone returns a copy of v that can be changed without changing v (nil
// stays nil).
func (v Values) Clone() Values {
	if v == nil {
		return nil
	}
	out := make(Values, len(v))
	for k, x := range v {
		out[k] = x
	}
	return out
}

// Validate checks the value of each of specs in v, in the order of specs,
// and returns the first refusal.
func Validate(specs []String, v Values) error {
	for _, s := range specs {
		if x := v[s.Name]; x != "" && s.Validate != nil {
			if err := s.Validate(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// Value is the pflag.Value (Set, String, Type) of the flag s declares:
// it reads and writes v[s.Name]. NewValue sets the default in v.
type Value struct {
	name string
	v    Values
}

// NewValue returns the flag value of s over v, v[s.Name] set to s.Default
// unless v already holds a value for it.
func NewValue(s String, v Values) *Value {
	if _, ok := v[s.Name]; !ok && s.Default != "" {
		v[s.Name] = s.Default
	}
	return &Value{name: s.Name, v: v}
}

// String returns the flag's value.
func (f *Value) String() string { return f.v[f.name] }

// Set sets the flag's value.
func (f *Value) Set(s string) error {
	if f.v == nil {
		return fmt.Errorf("--%s: no values to set", f.name)
	}
	f.v[f.name] = s
	return nil
}

// Type names the value in --help: "string", as a pflag.StringVar's.
func (f *Value) Type() string { return "string" }
