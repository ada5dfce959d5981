// Package mdlinks checks a set of markdown files the way a reader on GitHub
// would meet them: every relative link must name a file or directory that
// exists, a #fragment must name a heading (or an <a id>/<a name>) of the
// page it points into, and every page must be reachable from the front
// page by following links. Links in code (fenced blocks, inline spans) are
// text, not links, and external links (https:, mailto:, ...) are left to
// the reader.
package mdlinks

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Problem is one link that does not resolve.
type Problem struct {
	// File and Line are where the link is written.
	File string
	Line int
	// Link is the link's target as written.
	Link string
	// What says what is wrong.
	What string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Link, p.What)
}

// Link is one link of a page.
type Link struct {
	// Line is the line it is written on (1-based).
	Line int
	// Target is the link's destination as written.
	Target string
}

var (
	inline    = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDef    = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	htmlID    = regexp.MustCompile(`<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"`)
	heading   = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	scheme    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	fenceOpen = regexp.MustCompile("^\\s{0,3}(`{3,}|~{3,})")
)

// Links returns the links of a markdown text, outside code.
func Links(text string) []Link {
	var links []Link
	for i, l := range proseLines(text, false) {
		if l == "" {
			continue
		}
		for _, m := range inline.FindAllStringSubmatch(l, -1) {
			links = append(links, Link{Line: i + 1, Target: m[1]})
		}
		if m := refDef.FindStringSubmatch(l); m != nil {
			links = append(links, Link{Line: i + 1, Target: m[1]})
		}
	}
	return links
}

// Anchors returns the fragments a page answers to: GitHub's id of each
// heading (lower case, punctuation dropped, spaces as hyphens, "-1", "-2"
// for repeats) and every <a id> or <a name>.
func Anchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(text, true) {
		for _, m := range htmlID.FindAllStringSubmatch(l, -1) {
			anchors[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

var linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
var tag = regexp.MustCompile(`<[^>]+>`)

// Slug is GitHub's anchor of a heading's text: its words as rendered
// (links as their text, no emphasis or code marks, no HTML), lower case,
// every character but letters, digits, marks, '_', '-' and spaces dropped,
// each space a hyphen.
func Slug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	text = tag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// proseLines returns text's lines with code blanked: the lines of fenced
// blocks become empty and, unless keepSpans, inline code spans are removed,
// so that what is left is what renders as prose, headings and links (a
// heading keeps its spans: their text is part of its anchor). Line numbers
// are kept.
func proseLines(text string, keepSpans bool) []string {
	lines := strings.Split(text, "\n")
	out := make([]string, len(lines))
	var fence string
	for i, l := range lines {
		if fence != "" {
			t := strings.TrimSpace(l)
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if m := fenceOpen.FindStringSubmatch(l); m != nil {
			fence = m[1]
			continue
		}
		if keepSpans {
			out[i] = l
		} else {
			out[i] = stripCode(l)
		}
	}
	return out
}

// stripCode removes the inline code spans of a line: a run of n backticks
// up to the next run of exactly n.
func stripCode(l string) string {
	var b strings.Builder
	for i := 0; i < len(l); {
		if l[i] != '`' {
			b.WriteByte(l[i])
			i++
			continue
		}
		n := 0
		for i+n < len(l) && l[i+n] == '`' {
			n++
		}
		end := closing(l[i+n:], n)
		if end < 0 {
			b.WriteString(l[i : i+n])
			i += n
			continue
		}
		i += n + end + n
	}
	return b.String()
}

// closing is the index in s of the first run of exactly n backticks, or -1.
func closing(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := 0
		for i+m < len(s) && s[i+m] == '`' {
			m++
		}
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

// Check checks the relative links of files (paths to markdown files): each
// target, relative to its file's directory (or to root when it starts with
// "/"), must exist, and a fragment must be an anchor of the markdown page
// it names (or of its own page, for "#x").
func Check(root string, files []string) ([]Problem, error) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("mdlinks: %w", err)
		}
		anchors[path] = Anchors(string(b))
		return anchors[path], nil
	}
	var problems []Problem
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("mdlinks: %w", err)
		}
		for _, l := range Links(string(b)) {
			target, frag, external, err := resolve(root, file, l.Target)
			if external {
				continue
			}
			if err != nil {
				problems = append(problems, Problem{File: file, Line: l.Line, Link: l.Target, What: err.Error()})
				continue
			}
			info, err := os.Stat(target)
			if errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, Problem{File: file, Line: l.Line, Link: l.Target, What: "no such file or directory: " + target})
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("mdlinks: %w", err)
			}
			if frag == "" || info.IsDir() || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				return nil, err
			}
			if !a[frag] {
				problems = append(problems, Problem{File: file, Line: l.Line, Link: l.Target,
					What: fmt.Sprintf("%s has no heading with the anchor #%s", target, frag)})
			}
		}
	}
	return problems, nil
}

// resolve turns a link of file into a path and a fragment; external is set
// for a link with a scheme (https:, mailto:) or a network path.
func resolve(root, file, link string) (target, frag string, external bool, err error) {
	if scheme.MatchString(link) || strings.HasPrefix(link, "//") {
		return "", "", true, nil
	}
	path, frag, _ := strings.Cut(link, "#")
	if frag, err = url.PathUnescape(frag); err != nil {
		return "", "", false, fmt.Errorf("bad fragment: %w", err)
	}
	if path, err = url.PathUnescape(path); err != nil {
		return "", "", false, fmt.Errorf("bad path: %w", err)
	}
	path, _, _ = strings.Cut(path, "?")
	switch {
	case path == "":
		return file, frag, false, nil
	case strings.HasPrefix(path, "/"):
		return filepath.Join(root, filepath.FromSlash(path)), frag, false, nil
	default:
		return filepath.Join(filepath.Dir(file), filepath.FromSlash(path)), frag, false, nil
	}
}

// Unreached returns the files that cannot be reached from start by
// following relative links between markdown pages (a link to a directory
// reaches its README.md), in the order given.
func Unreached(root, start string, files []string) ([]string, error) {
	reached := map[string]bool{filepath.Clean(start): true}
	queue := []string{filepath.Clean(start)}
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		b, err := os.ReadFile(page)
		if err != nil {
			return nil, fmt.Errorf("mdlinks: %w", err)
		}
		for _, l := range Links(string(b)) {
			target, _, external, err := resolve(root, page, l.Target)
			if external || err != nil {
				continue
			}
			if info, err := os.Stat(target); err == nil && info.IsDir() {
				target = filepath.Join(target, "README.md")
			}
			target = filepath.Clean(target)
			if !strings.HasSuffix(target, ".md") || reached[target] {
				continue
			}
			if _, err := os.Stat(target); err != nil {
				continue
			}
			reached[target] = true
			queue = append(queue, target)
		}
	}
	var out []string
	for _, f := range files {
		if !reached[filepath.Clean(f)] {
			out = append(out, f)
		}
	}
	return slices.Clip(out), nil
}
