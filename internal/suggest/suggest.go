// Package suggest finds the word a person probably meant: the "did you
// mean" of an unknown config key, command or tool name.
package suggest

import "math"

// Closest returns the candidate within two edits of word (one edit for
// words of four bytes or fewer, where two edits make another word), the
// nearest first in candidate order; "" when there is none.
func Closest(word string, candidates []string) string {
	best, bestDist := "", 3
	if len(word) <= 4 {
		bestDist = 2
	}
	for _, c := range candidates {
		if d := Distance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance of a and b; words longer than 64
// bytes are never close (which also bounds the work).
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
