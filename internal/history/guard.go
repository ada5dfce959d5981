package history

// GuardCounts says how a legacy interim guard fared on one run: how often it
// evaluated, passed, allowed a write because its own count was incomplete
// (indeterminate), and rejected.
type GuardCounts struct {
	Evaluated     int64 `json:"evaluated"`
	Passed        int64 `json:"passed"`
	Indeterminate int64 `json:"indeterminate"`
	Rejected      int64 `json:"rejected"`
}

// Add accumulates o into g.
func (g *GuardCounts) Add(o GuardCounts) {
	g.Evaluated += o.Evaluated
	g.Passed += o.Passed
	g.Indeterminate += o.Indeterminate
	g.Rejected += o.Rejected
}
