// Package serialized reads the data the published Workflow DevKit runtime
// (@workflow/core) keeps in the events its world package stores: values
// it serialized (devalue, gzipped in 5.0; Decode) and a run_failed's code
// and message (RunFailure). It is the one reader of those shapes: the
// devkit engine maps the events it records with it, and replay reads the
// run_failed of a stored log with it, so a run is read alike whichever
// way it was captured.
package serialized
