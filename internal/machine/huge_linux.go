package machine

import (
	"errors"

	"golang.org/x/sys/unix"
)

// adviseHuge advises b MADV_HUGEPAGE; a kernel without transparent huge
// pages says EINVAL.
func adviseHuge(b []byte) error {
	err := unix.Madvise(b, unix.MADV_HUGEPAGE)
	if errors.Is(err, unix.EINVAL) {
		return ErrUnsupported
	}
	return err
}
