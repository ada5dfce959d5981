// Package gate checks a stored storm against rules (stormctl gate): --max
// KEY=N per cell, a clean control, rejections and true positives required,
// an infra rate bound, no cell worse than a baseline (package compare), all
// narrowed to conditions by glob; and always calibration (a storm whose
// legacy cells found nothing could not see the race) and completeness (a
// partial storm, or a partial --no-worse baseline, never passes). Config is the rules
// as the flags give them (Defaults, Validate); Check returns a Result that
// prints itself as lines or markdown.
package gate
