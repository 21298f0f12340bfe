package proctree

import "golang.org/x/sys/unix"

// snapshot reads the kernel's process table (kern.proc.all). macOS does
// not name a process's session by its leader's pid, so SID stays 0.
func snapshot() ([]Proc, error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	out := make([]Proc, 0, len(kps))
	for i := range kps {
		out = append(out, procOf(&kps[i]))
	}
	return out, nil
}

// lookup reads one process.
func lookup(pid int) (Proc, bool) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp == nil || int(kp.Proc.P_pid) != pid {
		return Proc{}, false
	}
	return procOf(kp), true
}

func procOf(kp *unix.KinfoProc) Proc {
	const zombie = 5 // SZOMB
	st := kp.Proc.P_starttime
	return Proc{
		PID:    int(kp.Proc.P_pid),
		PPID:   int(kp.Eproc.Ppid),
		PGID:   int(kp.Eproc.Pgid),
		Start:  uint64(st.Sec)*1e6 + uint64(st.Usec),
		Zombie: kp.Proc.P_stat == zombie,
	}
}

// HasEnv is false: macOS has no child subreapers, so no orphan is adopted
// to be told apart by its environment (see internal/process/reaper).
func HasEnv(int, string) bool { return false }
