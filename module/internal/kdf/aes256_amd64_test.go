//go:build amd64 && !purego

package kdf

// withoutWideKernel makes m use the AES-NI kernel even where VAES is
// available (tests).
func withoutWideKernel(m multi) {
	if nm, ok := m.(*niMulti); ok {
		nm.vaes = false
	}
}
