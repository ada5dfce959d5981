// Package ghaction lays out stormctl's GitHub action and workflows as a
// repository actionlint can check whole (.ci/run runs actionlint on it):
// actionlint checks workflows, not an action's metadata, so action.yml's
// steps are lifted into a workflow of their own (its inputs become the
// workflow's, its outputs a job's), action.yml is copied where the
// reusable workflow's `uses: ./.stormctl` finds it (so every `with:` given
// to the action is checked against its inputs), and the example workflow
// of each of ExampleDocs (docs/github-action.md) is written
// as a DevKit repository would add it, and once more calling the reusable
// workflow locally (so its `with:` is checked against that workflow's
// inputs).
package ghaction

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Paths in the repository, relative to its root.
const (
	ActionFile = "action.yml"
	Workflows  = ".github/workflows"
	// ExampleDoc holds the example workflow a DevKit repository adds.
	ExampleDoc = "docs/github-action.md"
	// FrontPage links to ExampleDoc and holds no copy of the example
	// (a copy would drift, and the front page stays short).
	FrontPage = "README.md"
	// ActionCheckout is where the reusable workflow checks stormctl out,
	// and so where its `uses: ./.stormctl` looks for action.yml.
	ActionCheckout = ".stormctl"
	// ReusableWorkflow is the workflow other repositories call.
	ReusableWorkflow = "storm-gate.yml"
)

// ExampleMarker is the line of ExampleDoc right above
// the example workflow's fenced block.
const ExampleMarker = "<!-- example-workflow: checked by actionlint (.ci/run, internal/ghaction) -->"

// ExampleDocument is a document showing the example workflow, and the
// name (without .yml) of its copy in the layout's workflows.
type ExampleDocument struct {
	Path, Workflow string
}

// ExampleDocs are the documents showing the example workflow, each laid
// out for actionlint and each checked to show the golden example comment
// (internal/cli): ExampleDoc first, the one the others must equal.
func ExampleDocs() []ExampleDocument {
	return []ExampleDocument{
		{Path: ExampleDoc, Workflow: "example-devkit-storm"},
	}
}

// action is the part of action.yml the lift reads.
type action struct {
	Inputs  yaml.Node `yaml:"inputs"`
	Outputs yaml.Node `yaml:"outputs"`
	Runs    struct {
		Using string    `yaml:"using"`
		Steps yaml.Node `yaml:"steps"`
	} `yaml:"runs"`
}

func parseAction(b []byte) (*action, error) {
	var a action
	if err := yaml.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", ActionFile, err)
	}
	if a.Runs.Using != "composite" {
		return nil, fmt.Errorf("%s: runs.using is %q, want composite", ActionFile, a.Runs.Using)
	}
	if a.Runs.Steps.Kind != yaml.SequenceNode || len(a.Runs.Steps.Content) == 0 {
		return nil, fmt.Errorf("%s: runs.steps is not a list of steps", ActionFile)
	}
	if a.Inputs.Kind != yaml.MappingNode || a.Outputs.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: inputs and outputs must be mappings", ActionFile)
	}
	return &a, nil
}

// pairs are a mapping node's keys and values.
func pairs(n *yaml.Node) (keys []string, values []*yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
		values = append(values, n.Content[i+1])
	}
	return keys, values
}

// field is the value of key in mapping n, nil when absent.
func field(n *yaml.Node, key string) *yaml.Node {
	keys, values := pairs(n)
	if i := slices.Index(keys, key); i >= 0 {
		return values[i]
	}
	return nil
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }
func mapping(kv ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: kv}
}

// Lift turns a composite action's metadata into a workflow actionlint
// checks: on workflow_call with the action's inputs (strings, required as
// the action has them) and outputs, one job whose steps are the action's
// and whose outputs are the action's output values. Defaults are left out:
// a workflow_call default cannot read the github context an action's may.
func Lift(actionYAML []byte) ([]byte, error) {
	a, err := parseAction(actionYAML)
	if err != nil {
		return nil, err
	}
	inputs, outputs, jobOutputs := mapping(), mapping(), mapping()
	names, specs := pairs(&a.Inputs)
	for i, name := range names {
		in := mapping(scalar("type"), scalar("string"))
		if r := field(specs[i], "required"); r != nil {
			in.Content = append(in.Content, scalar("required"), scalar(r.Value))
		}
		inputs.Content = append(inputs.Content, scalar(name), in)
	}
	names, specs = pairs(&a.Outputs)
	for i, name := range names {
		v := field(specs[i], "value")
		if v == nil {
			return nil, fmt.Errorf("%s: output %s has no value", ActionFile, name)
		}
		outputs.Content = append(outputs.Content, scalar(name), mapping(scalar("value"), scalar("${{ jobs.action.outputs."+name+" }}")))
		jobOutputs.Content = append(jobOutputs.Content, scalar(name), scalar(v.Value))
	}
	wf := mapping(
		scalar("name"), scalar(ActionFile+"'s steps"),
		scalar("on"), mapping(scalar("workflow_call"), mapping(scalar("inputs"), inputs, scalar("outputs"), outputs)),
		scalar("jobs"), mapping(scalar("action"), mapping(
			scalar("runs-on"), scalar("ubuntu-latest"),
			scalar("outputs"), jobOutputs,
			scalar("steps"), &a.Runs.Steps,
		)),
	)
	var b bytes.Buffer
	b.WriteString("# " + ActionFile + "'s steps lifted into a workflow by internal/ghaction, for actionlint: not a workflow to run.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{wf}}); err != nil {
		return nil, fmt.Errorf("lift %s: %w", ActionFile, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("lift %s: %w", ActionFile, err)
	}
	return b.Bytes(), nil
}

var (
	inputRef = regexp.MustCompile(`\binputs\.([A-Za-z0-9_-]+)`)
	stepRef  = regexp.MustCompile(`\bsteps\.([A-Za-z0-9_-]+)\.`)
	exprRE   = regexp.MustCompile(`\$\{\{(.*?)\}\}`)
)

// Check finds what a composite action's metadata gets wrong that a runner
// would only find when it runs it: an expression naming an input the action
// does not declare, or a step id no step has, or a run step without a
// shell. It reads the expressions (${{ }}) of every step and output value.
func Check(actionYAML []byte) error {
	a, err := parseAction(actionYAML)
	if err != nil {
		return err
	}
	inputs, _ := pairs(&a.Inputs)
	var ids []string
	var problems []error
	var exprs []string
	// collect gathers the expressions of n: every ${{ }}, and an if's
	// whole value (an if is an expression without them).
	var collect func(n *yaml.Node)
	collect = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			for _, m := range exprRE.FindAllStringSubmatch(n.Value, -1) {
				exprs = append(exprs, m[1])
			}
		}
		if n.Kind == yaml.MappingNode {
			if cond := field(n, "if"); cond != nil && !strings.Contains(cond.Value, "${{") {
				exprs = append(exprs, " "+cond.Value+" ")
			}
		}
		for _, c := range n.Content {
			collect(c)
		}
	}
	for i, step := range a.Runs.Steps.Content {
		if id := field(step, "id"); id != nil {
			ids = append(ids, id.Value)
		}
		if field(step, "run") != nil && field(step, "shell") == nil {
			problems = append(problems, fmt.Errorf("step %d runs a script without a shell (a composite action's run steps need one)", i+1))
		}
		collect(step)
	}
	collect(&a.Outputs)
	for _, e := range exprs {
		for _, m := range inputRef.FindAllStringSubmatch(e, -1) {
			if !slices.Contains(inputs, m[1]) {
				problems = append(problems, fmt.Errorf("${{%s}}: no input %s (inputs: %s)", e, m[1], strings.Join(inputs, ", ")))
			}
		}
		for _, m := range stepRef.FindAllStringSubmatch(e, -1) {
			if !slices.Contains(ids, m[1]) {
				problems = append(problems, fmt.Errorf("${{%s}}: no step with id %s", e, m[1]))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %w", ActionFile, errors.Join(problems...))
	}
	return nil
}

var reusableRef = regexp.MustCompile(`uses: [A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/\.github/workflows/` + regexp.QuoteMeta(ReusableWorkflow) + `@\S+`)

// Example is the example workflow of doc, the contents of the document at
// path (which errors name): the fenced block right after ExampleMarker.
// Local is the same workflow calling the reusable workflow of this
// repository (./.github/workflows/storm-gate.yml) instead of the published
// one.
func Example(path string, doc []byte) (example, local []byte, err error) {
	_, after, ok := bytes.Cut(doc, []byte(ExampleMarker+"\n"))
	if !ok {
		return nil, nil, fmt.Errorf("%s: no line %q above the example workflow", path, ExampleMarker)
	}
	fence, rest, ok := bytes.Cut(after, []byte("\n"))
	if !ok || !bytes.HasPrefix(fence, []byte("```")) {
		return nil, nil, fmt.Errorf("%s: no fenced block right after %q", path, ExampleMarker)
	}
	body, _, ok := bytes.Cut(rest, []byte("\n```\n"))
	if !ok {
		return nil, nil, fmt.Errorf("%s: the example workflow's block does not end", path)
	}
	example = append(body, '\n')
	if !reusableRef.Match(example) {
		return nil, nil, fmt.Errorf("%s: the example workflow calls no OWNER/REPO/%s/%s@REF", path, Workflows, ReusableWorkflow)
	}
	local = reusableRef.ReplaceAll(example, []byte("uses: ./"+Workflows+"/"+ReusableWorkflow))
	return example, local, nil
}

// Files are the layout WriteLayout writes: path (relative to its root) to
// contents.
type Files map[string][]byte

// Layout reads the repository at root and returns the scratch repository
// actionlint checks: every workflow of root, action.yml where the reusable
// workflow checks stormctl out, action.yml's steps lifted into a workflow,
// and each of ExampleDocs' example workflow as is and calling the local
// reusable workflow.
func Layout(root string) (Files, error) {
	files := Files{}
	wfs, err := filepath.Glob(filepath.Join(root, Workflows, "*.yml"))
	if err != nil || len(wfs) == 0 {
		return nil, fmt.Errorf("no workflows in %s: %v", filepath.Join(root, Workflows), err)
	}
	for _, p := range wfs {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files[filepath.Join(Workflows, filepath.Base(p))] = b
	}
	act, err := os.ReadFile(filepath.Join(root, ActionFile))
	if err != nil {
		return nil, err
	}
	if err := Check(act); err != nil {
		return nil, err
	}
	lifted, err := Lift(act)
	if err != nil {
		return nil, err
	}
	files[filepath.Join(ActionCheckout, ActionFile)] = act
	files[filepath.Join(Workflows, "lifted-action.yml")] = lifted
	for _, d := range ExampleDocs() {
		doc, err := os.ReadFile(filepath.Join(root, d.Path))
		if err != nil {
			return nil, err
		}
		example, local, err := Example(d.Path, doc)
		if err != nil {
			return nil, err
		}
		files[filepath.Join(Workflows, d.Workflow+".yml")] = example
		files[filepath.Join(Workflows, d.Workflow+"-local.yml")] = local
	}
	return files, nil
}

// Write writes the files under dir, and an empty .git directory: actionlint
// takes the directory holding .git for the repository's root, and checks a
// local action's or reusable workflow's inputs only inside one.
func (fs Files) Write(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		return err
	}
	for p, b := range fs {
		path := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
