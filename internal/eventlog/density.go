package eventlog

// CheckDensity asserts that events, read after position after, are exactly
// after+1, after+2, … with no hole, repeat or unpositioned entry. It returns a
// *GapError or *DuplicateError naming the first violation, nil otherwise.
func CheckDensity(runID string, after int64, events []Event) error {
	return checkPositions(runID, after, events, func(want, got int64) error {
		return &GapError{RunID: runID, Want: want, Got: got}
	})
}

// checkPositions walks events read after position after, wanting after+1,
// after+2, …: a repeated position is a *DuplicateError, a missing or
// unpositioned one the error missing gives for the position wanted and the
// one found.
func checkPositions(runID string, after int64, events []Event, missing func(want, got int64) error) error {
	want := after + 1
	for _, e := range events {
		switch {
		case e.Seq == want:
			want++
		case e.Seq != 0 && e.Seq < want:
			return &DuplicateError{RunID: runID, Seq: e.Seq}
		default:
			return missing(want, e.Seq)
		}
	}
	return nil
}
