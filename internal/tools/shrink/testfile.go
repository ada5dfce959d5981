package shrink

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"
	"text/template"
	"unicode"
)

// GoTest is the source of a Go test file of package pkg that embeds the
// schedule file fixture (in the same directory) and fails while the engine
// raises its divergence: a reproduction to keep beside a fix. from says
// where the run was recorded (a storm directory and cell).
func GoTest(pkg, fixture, from string, res Result) ([]byte, error) {
	name := "TestShrunk" + ident(res.Run)
	var b bytes.Buffer
	err := testTemplate.Execute(&b, map[string]any{
		"Pkg": pkg, "Fixture": fixture, "Var": "schedule" + ident(res.Run), "Name": name, "Run": res.Run, "From": from,
		"Failing": res.Failing, "Error": res.Error, "Before": res.Before, "After": res.After,
	})
	if err != nil {
		return nil, fmt.Errorf("write the test of run %s: %w", res.Run, err)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format the test of run %s: %w", res.Run, err)
	}
	return src, nil
}

// Package is a Go package name made of dir's base name: lower-case
// letters and digits, "repro" when none are left or it starts with a
// digit.
func Package(base string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		}
	}
	if s := b.String(); s != "" && !unicode.IsDigit(rune(s[0])) {
		return s
	}
	return "repro"
}

// ident is s's ASCII letters and digits, the first upper-cased.
func ident(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if b.Len() == 0 {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// comment quotes a text into a line comment's body.
func comment(s string) string { return strings.ReplaceAll(s, "\n", " ") }

var testTemplate = template.Must(template.New("test").Funcs(template.FuncMap{"comment": comment}).Parse(`// Written by stormctl shrink from run {{.Run}}{{if .From}} ({{comment .From}}){{end}}.

package {{.Pkg}}

import (
	_ "embed"
	"testing"

	"github.com/stormctl/stormctl/internal/tools/shrink"
)

// {{.Var}} is the minimal schedule shrink found: {{.After.Invocations}} invocations,
// {{.After.Events}} events and {{.After.Reads}} reads of the recorded {{.Before.Invocations}}, {{.Before.Events}} and {{.Before.Reads}}.
//
//go:embed {{.Fixture}}
var {{.Var}} string

// {{.Name}} executes the schedule through the model engine (each write
// derived from what its invocation read) and replays {{.Failing}}'s reads. It
// fails while the engine raises the recorded divergence:
//
//	{{comment .Error}}
func {{.Name}}(t *testing.T) {
	if err := shrink.Reproduce(t.Context(), {{.Var}}); err != nil {
		t.Fatal(err)
	}
}
`))
