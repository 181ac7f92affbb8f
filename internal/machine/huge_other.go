//go:build !linux

package machine

// adviseHuge reports that huge pages cannot be advised outside Linux.
func adviseHuge([]byte) error { return ErrUnsupported }
