// Package plural writes counts in English: "1 rule", "2 rules". It is the
// one place the commands' messages agree on how a count reads.
package plural

import "strconv"

// Count writes n and the noun, the noun with an s unless n is 1:
// Count(1, "rule") is "1 rule", Count(0, "rule") is "0 rules".
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Word(n, noun, noun+"s")
}

// Word picks one when n is 1 and many otherwise, for nouns and verbs
// whose plural is not an added s: Word(n, "run holds", "runs hold").
func Word(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
