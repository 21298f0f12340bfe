//go:build !linux && !darwin

package proctree

func snapshot() ([]Proc, error) { return nil, ErrUnsupported }

func lookup(int) (Proc, bool) { return Proc{}, false }
