package fault

import "regexp"

// blamed matches whom a host backend timeout names: "rank 2", "ranks 1 and 2".
var blamed = regexp.MustCompile(`timed out after \S+ waiting for (ranks? [0-9]+(?:(?:, | and )[0-9]+)*)`)

// Blamed returns the rank(s) a timeout error names as the ones that made no
// progress ("rank 2", "ranks 1 and 2"), or "" when err names none.
func Blamed(err error) string {
	if err == nil {
		return ""
	}
	if m := blamed.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}
