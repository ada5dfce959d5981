package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports/comment"
	"github.com/stormctl/stormctl/reports/gate"
)

// CommentOptions are the comment command's options.
type CommentOptions struct {
	IO  *IOStreams
	Dir string
	// Baseline is the base branch's storm to compare with ("" for none).
	Baseline string
	// Previous is a file holding the previous comment's body ("" for
	// none): its history is carried on.
	Previous string
	// Gates are files of gate --format json output on the storm.
	Gates []string
	// Commit and ArtifactURL label this storm's history row.
	Commit      string
	ArtifactURL string
	// Keep is how many storms the history keeps, this one included.
	Keep int
}

// NewCmdComment returns `stormctl comment`. runF replaces runComment in
// tests.
func NewCmdComment(f *Factory, runF func(context.Context, *CommentOptions) error) *cobra.Command {
	opts := &CommentOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "comment DIR",
		Short: "Print a stored storm's pull-request comment: tables, gate verdicts, comparison, wrong runs, history",
		Long: `Print, in markdown, the comment a pull request's storm leaves on it (the
GitHub action posts it, and updates it in place on every storm):

  - the gates' verdicts (--gate FILE, each gate --format json's output on
    this storm; one line per broken rule, or the line it passed with);
    a partial storm (shards not merged or stopped early, cells with fewer
    runs than storm.json planned: what gate fails as "partial", read from
    the storm's storm.json and from the gates' JSON) has the first line
    "partial storm, N of M runs missing (...)" and never reads "gate
    passed", with a line per thing it is missing;
  - the storm's tables, as report --format markdown prints them;
  - the comparison with the base branch's storm (--baseline DIR), as
    compare --format markdown prints it, or a line saying there was none;
  - the runs that went wrong, per cell and root-cause class, with the paths
    of their timelines in the storm directory (--artifact-url: where the
    directory was uploaded);
  - the pull request's last storms (--history N), a row each: the commit
    (--commit), the gates' verdict and every cell's corrupted+silent runs
    of its runs less infra.

The history is carried in the comment itself, as a hidden block of JSON
rows: --previous FILE reads it from the previous comment's body and adds
this storm's row. A previous body is untrusted input: one whose block does
not parse, or holds anything a row may not (a cell name markdown would
read, a URL that is not https, a count past its runs), is said on stderr and
a fresh history starts; a body without a block starts one silently. A body
longer than a comment holds is cut at a line, the hidden history kept
whole.

The storm, the baseline and every --gate file are read as report, compare
and gate read them: a missing or malformed one exits 2 (a storm's comment
is printed first when what could be read of it allows).`,
		Example: `  stormctl comment storm
  stormctl gate storm --format json > gate.json || true
  stormctl comment storm --baseline base --gate gate.json --previous previous.md \
    --commit "$GITHUB_SHA" --artifact-url "$ARTIFACT_URL" > comment.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runComment(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Baseline, "baseline", "", "the base branch's storm directory, to compare with")
	fl.StringVar(&opts.Previous, "previous", "", "a file holding the previous comment's body, whose history is carried on")
	fl.StringArrayVar(&opts.Gates, "gate", nil, "a file of gate --format json output on this storm (repeatable, one per gate)")
	fl.StringVar(&opts.Commit, "commit", "", "the commit stormed, for the history (7 to 40 lower-case hex digits)")
	fl.StringVar(&opts.ArtifactURL, "artifact-url", "", "the https URL the storm directory was uploaded to (its timelines are under it)")
	fl.IntVar(&opts.Keep, "history", comment.DefaultKeep, fmt.Sprintf("how many storms the history keeps, this one included (1 to %d)", comment.MaxRows))
	return cmd
}

func runComment(_ context.Context, opts *CommentOptions) error {
	if err := comment.CheckCommit(opts.Commit); err != nil {
		return usage("--commit %v", err)
	}
	if err := comment.CheckURL(opts.ArtifactURL); err != nil {
		return usage("--artifact-url %v", err)
	}
	if opts.Keep < 1 || opts.Keep > comment.MaxRows {
		return usage("--history must be in [1, %d], got %d", comment.MaxRows, opts.Keep)
	}
	c := comment.Comment{Commit: opts.Commit, ArtifactURL: opts.ArtifactURL, Keep: opts.Keep}
	for _, path := range opts.Gates {
		g, err := readGate(path)
		if err != nil {
			return &UsageError{Err: err}
		}
		c.Gates = append(c.Gates, g)
	}
	if opts.Previous != "" {
		body, err := readPrevious(opts.Previous)
		if err != nil {
			return &UsageError{Err: err}
		}
		h, err := comment.ParseHistory(body)
		if err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "comment: --previous %s: %v: starting a fresh history\n", opts.Previous, err)
		}
		c.History = h
	}
	head, headErr := loadStorm(opts.IO, "comment", opts.Dir)
	if head == nil {
		return headErr
	}
	c.Summary, c.Partial = head.Summary, head.Partial()
	var baseErr error
	if opts.Baseline != "" {
		var base *stormdir.Stored
		base, baseErr = loadStorm(opts.IO, "comment", opts.Baseline)
		if base == nil {
			return baseErr
		}
		c.Compare = compareStorms(base, head)
	}
	if err := c.Markdown(opts.IO.Out); err != nil {
		return err
	}
	if err := errors.Join(headErr, baseErr); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// readGate reads a gate's result as gate --format json printed it; an
// empty file is a gate that printed none, which fails.
func readGate(path string) (*gate.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--gate: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		// The gate ran (its step made the file) and printed no verdict: it
		// stopped first (a storm it could not read, a crash). No verdict is
		// not a pass.
		return &gate.Result{Broken: []gate.Breach{{Rule: "gate", Reason: filepath.Base(path) +
			" is empty: the gate stopped before printing a verdict (its step's log says why)"}}}, nil
	}
	var probe struct {
		Passed *bool `json:"passed"`
	}
	var r gate.Result
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("--gate %s: not gate --format json output: %v", path, err)
	}
	if probe.Passed == nil {
		return nil, fmt.Errorf("--gate %s: not gate --format json output: no \"passed\"", path)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("--gate %s: not gate --format json output: %v", path, err)
	}
	return &r, nil
}

// readPrevious reads a previous comment's body, at most one byte more than
// a comment holds (ParseHistory refuses that one).
func readPrevious(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--previous: %w", err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.LimitReader(f, comment.MaxPrevious+1)); err != nil {
		return nil, fmt.Errorf("--previous: %w", err)
	}
	return b.Bytes(), nil
}
