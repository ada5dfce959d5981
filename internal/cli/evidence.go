package cli

import "github.com/stormctl/stormctl/internal/tools/evidence"

// loadStoredRun reads run runID of the storm directory path; every
// failure is bad input, naming the file at fault.
func loadStoredRun(path, runID string) (*evidence.Run, error) {
	r, err := evidence.Load(path, runID)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	return r, nil
}
