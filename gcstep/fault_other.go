//go:build !linux

package gcstep

import "time"

// measureFault is unknown here: refaults are not charged.
func measureFault() time.Duration { return 0 }
