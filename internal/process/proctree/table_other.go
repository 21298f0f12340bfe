//go:build !linux && !darwin

package proctree

func snapshot() ([]Proc, error) { return nil, ErrUnsupported }

func lookup(int) (Proc, bool) { return Proc{}, false }

// HasEnv is false: the environments of other processes are not read here.
func HasEnv(int, string) bool { return false }
