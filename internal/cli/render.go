package cli

import (
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

func markdownRenderer() tw.Renderer { return renderer.NewMarkdown() }
