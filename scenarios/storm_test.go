package scenarios

import (
	"encoding/json"
	"slices"
	"testing"
)

// stormLedger is the one correct output of a storm run whose branch b of
// round r took paths[r][b]; want says what a non-timer race winner returns
// and whether branches launch.
func stormLedger(paths [][]string, want stormWant) StormOutput {
	var out StormOutput
	for r, round := range paths {
		var rd Round
		stragglers := 0
		for b, path := range round {
			br := Branch{R: r, B: b, Path: path,
				Finalize: expect("finalize", stepArgs{R: r, B: b, Path: path}),
				Release:  expect("release", stepArgs{R: r, B: b})}
			if want.launch {
				br.Launch = settleWon(r, b)
			}
			if path == pathTimer {
				stragglers++
				br.Recover = expect("recover", stepArgs{R: r, B: b})
			} else if !slices.Contains(want.lost, path) {
				br.Won = want.won(r, b)
			}
			rd.Branches = append(rd.Branches, br)
		}
		for i := range 2 + stragglers {
			rd.Reconciles = append(rd.Reconciles, expect("reconcile", stepArgs{R: r, B: i}))
		}
		out.Rounds = append(out.Rounds, rd)
	}
	return out
}

// stormCheckCase is one ledger a storm scenario's Check must accept or
// reject. paths defaults to stormPaths(win); mutate edits the correct
// ledger built from them.
type stormCheckCase struct {
	name   string
	paths  func(win string) [][]string
	mutate func(o *StormOutput)
	ok     bool
}

// stormInputJSON is the tiny input every storm check case runs against.
var stormInputJSON = mustMarshal(stormInput{Rounds: 2, Width: 2, Scale: 1, Seed: 7})

// stormPaths: round 0 has one straggler, round 1 none.
func stormPaths(win string) [][]string {
	return [][]string{{pathTimer, win}, {win, win}}
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// commonStormCases are the ledgers every storm scenario must judge alike;
// want.win is the scenario's non-timer path, other a path it can never take.
func commonStormCases(want stormWant, other string) []stormCheckCase {
	win, won := want.win, want.won
	br := func(o *StormOutput, r, b int) *Branch { return &o.Rounds[r].Branches[b] }
	return []stormCheckCase{
		{name: "correct ledger", ok: true},
		{name: "every branch a straggler", ok: true,
			paths: func(string) [][]string { return [][]string{{pathTimer, pathTimer}, {pathTimer, pathTimer}} }},
		{name: "no straggler", ok: true,
			paths: func(w string) [][]string { return [][]string{{w, w}, {w, w}} }},

		// Silent corruption: every step returned, but to the wrong branch.
		{name: "finalize results of two branches swapped", mutate: func(o *StormOutput) {
			a, b := br(o, 1, 0), br(o, 1, 1)
			a.Finalize, b.Finalize = b.Finalize, a.Finalize
		}},
		{name: "finalize results swapped across paths", mutate: func(o *StormOutput) {
			a, b := br(o, 0, 0), br(o, 0, 1)
			a.Finalize, b.Finalize = b.Finalize, a.Finalize
		}},
		{name: "release results swapped", mutate: func(o *StormOutput) {
			a, b := br(o, 1, 0), br(o, 1, 1)
			a.Release, b.Release = b.Release, a.Release
		}},
		{name: "finalize called with the other path", mutate: func(o *StormOutput) {
			br(o, 1, 1).Finalize = expect("finalize", stepArgs{R: 1, B: 1, Path: pathTimer})
		}},
		{name: "won value of another branch", mutate: func(o *StormOutput) {
			br(o, 1, 0).Won = won(1, 1)
		}},
		{name: "won value missing", mutate: func(o *StormOutput) { br(o, 1, 0).Won = "" }},
		{name: "won value on the timer path", mutate: func(o *StormOutput) { br(o, 0, 0).Won = won(0, 0) }},
		{name: "whole branches swapped", mutate: func(o *StormOutput) {
			bs := o.Rounds[1].Branches
			bs[0], bs[1] = bs[1], bs[0]
		}},
		{name: "rounds swapped", mutate: func(o *StormOutput) {
			o.Rounds[0], o.Rounds[1] = o.Rounds[1], o.Rounds[0]
		}},

		// The path behind the race.
		{name: "recover on the winner's path", mutate: func(o *StormOutput) {
			br(o, 1, 0).Recover = expect("recover", stepArgs{R: 1, B: 0})
		}},
		{name: "timer path without recover", mutate: func(o *StormOutput) { br(o, 0, 0).Recover = "" }},
		{name: "recover of another branch", mutate: func(o *StormOutput) {
			br(o, 0, 0).Recover = expect("recover", stepArgs{R: 0, B: 1})
		}},
		{name: "path flipped to timer, nothing else", mutate: func(o *StormOutput) { br(o, 1, 1).Path = pathTimer }},
		{name: "a path the scenario cannot take", mutate: func(o *StormOutput) {
			b := br(o, 1, 0)
			b.Path = other
			b.Finalize = expect("finalize", stepArgs{R: 1, B: 0, Path: other})
		}},
		{name: "no path", mutate: func(o *StormOutput) {
			b := br(o, 1, 0)
			b.Path = ""
			b.Finalize = expect("finalize", stepArgs{R: 1, B: 0})
		}},

		// Reconciles: 2 + stragglers of the round.
		{name: "reconcile missing for the straggler", mutate: func(o *StormOutput) {
			o.Rounds[0].Reconciles = o.Rounds[0].Reconciles[:2]
		}},
		{name: "reconcile without a straggler", mutate: func(o *StormOutput) {
			o.Rounds[1].Reconciles = append(o.Rounds[1].Reconciles, expect("reconcile", stepArgs{R: 1, B: 2}))
		}},
		{name: "reconciles out of order", mutate: func(o *StormOutput) {
			rs := o.Rounds[0].Reconciles
			rs[0], rs[2] = rs[2], rs[0]
		}},
		{name: "reconcile of another round", mutate: func(o *StormOutput) {
			o.Rounds[1].Reconciles[1] = expect("reconcile", stepArgs{R: 0, B: 1})
		}},

		// Shape.
		{name: "a round missing", mutate: func(o *StormOutput) { o.Rounds = o.Rounds[:1] }},
		{name: "an extra round", mutate: func(o *StormOutput) { o.Rounds = append(o.Rounds, o.Rounds[1]) }},
		{name: "no rounds", mutate: func(o *StormOutput) { o.Rounds = nil }},
		{name: "a branch missing", mutate: func(o *StormOutput) { o.Rounds[1].Branches = o.Rounds[1].Branches[:1] }},
		{name: "an extra branch", mutate: func(o *StormOutput) {
			extra := stormLedger([][]string{{win, win, win}}, want).Rounds[0].Branches[2]
			extra.R = 1
			o.Rounds[1].Branches = append(o.Rounds[1].Branches, extra)
		}},
	}
}

// launchCases are the ledgers a storm's check judges by whether its
// branches launch (blocked-branch) or not.
func launchCases(want stormWant) []stormCheckCase {
	if !want.launch {
		return []stormCheckCase{
			{name: "a launch in a scenario without one", mutate: func(o *StormOutput) {
				o.Rounds[1].Branches[0].Launch = settleWon(1, 0)
			}},
		}
	}
	return []stormCheckCase{
		{name: "launch missing", mutate: func(o *StormOutput) { o.Rounds[1].Branches[0].Launch = "" }},
		{name: "launch of another branch", mutate: func(o *StormOutput) {
			o.Rounds[1].Branches[0].Launch = settleWon(1, 1)
		}},
		{name: "launch results of two rounds swapped", mutate: func(o *StormOutput) {
			a, b := &o.Rounds[0].Branches[1], &o.Rounds[1].Branches[1]
			a.Launch, b.Launch = b.Launch, a.Launch
		}},
		{name: "launch missing on a straggler", mutate: func(o *StormOutput) { o.Rounds[0].Branches[0].Launch = "" }},
	}
}

// runStormCheckCases runs the common and launch cases and the scenario's
// own extra ones against sc.Check (other: a path sc can never take), plus
// the ways the raw input and output can be unreadable.
func runStormCheckCases(t *testing.T, sc Scenario, want stormWant, other string, extra ...stormCheckCase) {
	t.Helper()
	cases := append(append(commonStormCases(want, other), launchCases(want)...), extra...)
	win := want.win
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			paths := stormPaths(win)
			if tc.paths != nil {
				paths = tc.paths(win)
			}
			out := stormLedger(paths, want)
			if tc.mutate != nil {
				tc.mutate(&out)
			}
			raw := mustMarshal(out)
			err := sc.Check(stormInputJSON, raw)
			switch {
			case tc.ok && err != nil:
				t.Errorf("Check rejected a correct ledger: %v\n%s", err, raw)
			case !tc.ok && err == nil:
				t.Errorf("Check accepted a wrong ledger:\n%s", raw)
			}
		})
	}
	good := mustMarshal(stormLedger(stormPaths(win), want))
	for name, io := range map[string][2]json.RawMessage{
		"output not JSON":  {stormInputJSON, json.RawMessage(`{"rounds":[`)},
		"output null":      {stormInputJSON, json.RawMessage(`null`)},
		"output wrong":     {stormInputJSON, json.RawMessage(`{"rounds":"many"}`)},
		"input not JSON":   {json.RawMessage(`{`), good},
		"input for larger": {mustMarshal(stormInput{Rounds: 2, Width: 3}), good},
	} {
		t.Run(name, func(t *testing.T) {
			if err := sc.Check(io[0], io[1]); err == nil {
				t.Errorf("Check accepted input %s with output %s", io[0], io[1])
			}
		})
	}
}

func TestStormLedgerShape(t *testing.T) {
	// The hand-built ledger the check tests start from must itself look like
	// what stormProgram returns: one straggler in round 0, three reconciles.
	out := stormLedger(stormPaths(pathStep), stormWant{win: pathStep, won: func(r, b int) string { return "w" }})
	if got := len(out.Rounds[0].Reconciles); got != 3 {
		t.Fatalf("round 0 has %d reconciles, want 3", got)
	}
	if got := out.Rounds[0].Branches[0]; got.Recover != "recover(r=0,b=0)" || got.Finalize != "finalize(r=0,b=0,timer)" {
		t.Fatalf("straggler ledger %+v", got)
	}
	if !slices.Equal(out.Rounds[1].Reconciles, []string{"reconcile(r=1,b=0)", "reconcile(r=1,b=1)"}) {
		t.Fatalf("round 1 reconciles %v", out.Rounds[1].Reconciles)
	}
}

// TestStormInputRounds: the round-based scenarios run env's rounds, the
// harness's 6 when env names none.
func TestStormInputRounds(t *testing.T) {
	for _, tc := range []struct{ env, want int }{{0, DefaultRounds}, {1, 1}, {8, 8}} {
		in, ok := stormInputFor(Env{Scale: 1, Rounds: tc.env}, 0).(stormInput)
		if !ok || in.Rounds != tc.want || in.Width != 8 {
			t.Errorf("Env.Rounds %d: input %+v, want %d rounds of 8", tc.env, in, tc.want)
		}
	}
}
