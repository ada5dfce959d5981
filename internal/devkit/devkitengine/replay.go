package devkitengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/stormctl/stormctl/internal/devkit/devkitscen"
	"github.com/stormctl/stormctl/internal/engines"
	"github.com/stormctl/stormctl/internal/engines/rerun"
	"github.com/stormctl/stormctl/worlds/devkitworld"
	"github.com/stormctl/stormctl/worlds/devkitworld/sidecar"
)

// Replayer re-executes recorded invocations of a devkit run through the
// published runtime the storm ran: a host of its own in replay mode (open
// with world "replay"), whose world has no store and serves each replay
// the operations its invocation recorded (internal/devkit/node/host.mjs, ReplayWorld). It
// implements rerun.Runtime; replays run concurrently in the one host.
type Replayer struct {
	proc *sidecar.Process
	wf   devkitscen.Workflow
	dir  string
}

var _ rerun.Runtime = (*Replayer)(nil)

// ErrRuntimeMismatch is matched by OpenReplayer's refusal of a kit whose
// packages are not the ones the run's storm ran.
var ErrRuntimeMismatch = errors.New("the kit's packages are not the ones the storm ran")

// ErrNotPinned is matched by RuntimeOf's refusal of a runtime whose
// packages stormctl does not pin (a checkout's, another channel's, a world
// that is no devkit world).
var ErrNotPinned = errors.New("its runtime's packages are not a published channel's")

// RuntimeOf says which kit replays runs of a cell that rt ran: its
// channel and the kind of world its packages are pinned for. A runtime
// from a checkout (--devkit-dir) is refused: its packages are not pinned.
func RuntimeOf(rt engines.Runtime, world string) (Channel, devkitworld.Kind, error) {
	if rt.Source != "" && rt.Source != "published" {
		return "", "", fmt.Errorf("%w: its cell ran a vercel/workflow checkout (%s), whose packages stormctl does not pin", ErrNotPinned, rt.Source)
	}
	ch, err := ParseChannel(rt.Channel)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrNotPinned, err)
	}
	k, ok := devkitworld.KindOf(world)
	if !ok {
		return "", "", fmt.Errorf("%w: its world %s is no devkit world", ErrNotPinned, world)
	}
	return ch, k, nil
}

// ReplayerFor opens a replay host on the kit of the runtime rt that ran
// a cell of world and scenario (storm.json's record of it), installing the
// kit under cacheDir the first time (lines on progress say so).
func ReplayerFor(ctx context.Context, cacheDir string, rt engines.Runtime, world, scenario string, progress io.Writer) (*Replayer, error) {
	ch, kind, err := RuntimeOf(rt, world)
	if err != nil {
		return nil, err
	}
	kit, err := Prepare(ctx, cacheDir, ch, kind, progress)
	if err != nil {
		return nil, err
	}
	return OpenReplayer(ctx, kit, scenario, rt.Versions, rt.BatchCreates)
}

// OpenReplayer starts a replay host on kit, for runs of scenario's
// workflow, after checking that the kit's packages are the versions want
// (storm.json's record of the cell) lists. batch: the runs' world had
// events.createBatch (engines.Runtime.BatchCreates), which the replay
// world then offers too.
func OpenReplayer(ctx context.Context, kit Kit, scenario string, want map[string]string, batch bool) (*Replayer, error) {
	wf, err := devkitscen.Lookup(scenario)
	if err != nil {
		return nil, err
	}
	return openReplayer(ctx, kit, wf, want, batch)
}

// OpenReplay opens a replay host on the cell's own kit, for its
// workflow: the runtime the storm judges the cell's refused writes
// through (engines.ReplayOpener).
func (e *Engine) OpenReplay(ctx context.Context) (engines.Rerun, error) {
	return openReplayer(ctx, e.kit, e.wf, e.hosts[0].info.Versions, e.hosts[0].info.BatchCreates)
}

var _ engines.ReplayOpener = (*Engine)(nil)

func openReplayer(ctx context.Context, kit Kit, wf devkitscen.Workflow, want map[string]string, batch bool) (*Replayer, error) {
	dir, err := os.MkdirTemp("", "stormctl-replay-")
	if err != nil {
		return nil, fmt.Errorf("devkit replay: %w", err)
	}
	proc, err := sidecar.StartCommand(sidecar.Command{Script: kit.Host, Dir: kit.Dir})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &Replayer{proc: proc, wf: wf, dir: dir}
	var info openInfo
	args := map[string]any{"world": "replay", "dataDir": dir, "workflows": kit.Workflows, "steps": kit.Steps, "batch": batch}
	if err := proc.Call(ctx, "open", args, &info); err != nil {
		r.Close()
		return nil, fmt.Errorf("devkit replay: open the runtime: %w", err)
	}
	if diff := versionDiff(want, info.Versions); diff != "" {
		r.Close()
		return nil, fmt.Errorf("%w: %s", ErrRuntimeMismatch, diff)
	}
	return r, nil
}

// versionDiff says which packages the storm ran in other versions than
// the kit holds ("" when none): node's own version is not compared.
func versionDiff(want, got map[string]string) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if name == "node" {
			continue
		}
		if g := got[name]; g != want[name] {
			out = append(out, fmt.Sprintf("%s %s in the storm, %s in the kit", name, want[name], orNone(g)))
		}
	}
	return strings.Join(out, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Replay re-executes one recorded invocation once.
func (r *Replayer) Replay(ctx context.Context, inv rerun.RuntimeInvocation) (rerun.RuntimeResult, error) {
	run := map[string]any{"created": inv.Created}
	if !inv.Started.IsZero() {
		run["startedAt"] = float64(inv.Started.UnixMicro()) / 1000
	}
	args := map[string]any{
		"runId":        inv.RunID,
		"workflowName": r.wf.ID(),
		"ops":          inv.Ops,
		"run":          run,
		"clock":        float64(inv.Clock.UnixMicro()) / 1000,
	}
	if inv.Scratch {
		args["scratch"] = true
	}
	if d := inv.Delivery; d != nil {
		args["delivery"] = map[string]any{"body": map[string]any{"data": d.Body, "contentType": d.ContentType}, "messageId": d.MessageID, "attempt": d.Attempt}
	}

	if inv.Recovery > 0 {
		args["recovery"] = map[string]any{"eventId": "", "count": inv.Recovery}
	}
	var out rerun.RuntimeResult
	if err := r.proc.Call(ctx, "replay", args, &out); err != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return out, fmt.Errorf("devkit replay host: %w", err)
	}
	return out, nil
}

// Close stops the host and removes its (unused) data directory.
func (r *Replayer) Close() {
	_ = r.proc.Stop()
	os.RemoveAll(r.dir)
}

// WorkflowCode implements rerun.WorkflowSource: the workflow code the
// kit's workflows bundle hands core, read by the host.
func (r *Replayer) WorkflowCode(ctx context.Context) (string, error) {
	var out struct {
		Code string `json:"code"`
	}
	if err := r.proc.Call(ctx, "workflowCode", map[string]any{}, &out); err != nil {
		return "", fmt.Errorf("devkit replay host: the workflow code: %w", err)
	}
	return out.Code, nil
}

var _ rerun.WorkflowSource = (*Replayer)(nil)
