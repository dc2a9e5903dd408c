//go:build !linux

package janitor

import (
	"errors"
	"os"
)

var errNoLeases = errors.New("file leases are a Linux feature")

// takeLease: leases are not available here; the /proc check stands in.
func takeLease(*os.File) (bool, error) { return false, errNoLeases }

func leaseBroken(*os.File) bool { return false }

func dropLease(*os.File) {}
