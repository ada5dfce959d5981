package eventlog

// CheckDensity asserts that events, read after position after, are exactly
// after+1, after+2, … with no hole, repeat or unpositioned entry. It returns a
// *GapError or *DuplicateError naming the first violation, nil otherwise.
func CheckDensity(runID string, after int64, events []Event) error {
	want := after + 1
	for _, e := range events {
		switch {
		case e.Seq == want:
			want++
		case e.Seq != 0 && e.Seq < want:
			return &DuplicateError{RunID: runID, Seq: e.Seq}
		default:
			return &GapError{RunID: runID, Want: want, Got: e.Seq}
		}
	}
	return nil
}
