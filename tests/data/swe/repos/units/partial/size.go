// Package units parses human-readable sizes.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

var multipliers = map[string]int64{"B": 1, "KB": 1000, "MB": 1000 * 1000}

// ParseSize turns "10KB" into 10000.
func ParseSize(text string) (int64, error) {
	text = strings.TrimSpace(text)
	for _, suffix := range []string{"KB", "MB", "B"} {
		if strings.HasSuffix(text, suffix) {
			number, err := strconv.ParseInt(strings.TrimSuffix(text, suffix), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bad size %q: %w", text, err)
			}
			return number * multipliers[suffix], nil
		}
	}
	return 0, fmt.Errorf("bad size %q: no unit", text)
}
