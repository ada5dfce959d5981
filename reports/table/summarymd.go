package table

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/stormctl/stormctl/internal/storm/stormdir"
	"github.com/stormctl/stormctl/reports"
	"github.com/stormctl/stormctl/reports/plots"
)

// SummaryMarkdown renders summary.md: the summary in markdown, then the
// plots (file names in the storm directory) linked.
func SummaryMarkdown(s *reports.Summary, plotFiles []string) ([]byte, error) {
	var md bytes.Buffer
	if err := (Summary{Summary: s}).Markdown(&md); err != nil {
		return nil, err
	}
	for _, p := range plotFiles {
		fmt.Fprintf(&md, "\n![%s](%s)\n", strings.TrimSuffix(p, ".png"), p)
	}
	return md.Bytes(), nil
}

// RewriteSummary writes summary.json and summary.md of a stored storm
// again from s (after checkers computed something the storm did not),
// linking the plots the directory holds.
func RewriteSummary(dir string, s *reports.Summary) error {
	var have []string
	for _, p := range plots.Files() {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			have = append(have, p)
		}
	}
	md, err := SummaryMarkdown(s, have)
	if err != nil {
		return err
	}
	if err := stormdir.WriteJSON(filepath.Join(dir, stormdir.FileSummary), s); err != nil {
		return err
	}
	return stormdir.WriteFile(filepath.Join(dir, stormdir.FileMD), md)
}
