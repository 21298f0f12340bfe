package proctree

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Tree is everything one server started, on Windows: a job object with
// kill-on-close that holds the server from its first instruction (it is
// created suspended, assigned, then resumed) and, since Windows 8,
// whatever it starts. The sidecar's handle is the job's only one: if the
// sidecar dies, the kernel closes it and ends every process of the job.
// The server also leads a console process group of its own, so that a
// Ctrl-Break reaches it and not the sidecar.
type Tree struct {
	mu  sync.Mutex
	job windows.Handle
	pid uint32
}

func NewTree() *Tree { return &Tree{} }

func (t *Tree) Prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED
	cmd.SysProcAttr.HideWindow = true
}

// Attach puts the suspended child in a new job and resumes it. Whatever
// fails, the child is resumed (or, if it cannot be, ended): an error means
// it runs outside a job.
func (t *Tree) Attach(pid int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pid = uint32(pid)
	jobErr := t.newJob()
	if err := resumeProcess(t.pid); err != nil {
		if h, oerr := windows.OpenProcess(windows.PROCESS_TERMINATE, false, t.pid); oerr == nil {
			windows.TerminateProcess(h, 1)
			windows.CloseHandle(h)
		}
		return fmt.Errorf("resuming the server: %w", err)
	}
	return jobErr
}

func (t *Tree) newJob() error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("creating a job object: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("setting kill-on-close: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, t.pid)
	if err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("opening the server process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("assigning the server to a job object: %w", err)
	}
	t.job = job
	return nil
}

// resumeProcess resumes the threads of a process created suspended (its
// main thread: os/exec does not keep the thread handle).
func resumeProcess(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	var te windows.ThreadEntry32
	te.Size = uint32(unsafe.Sizeof(te))
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, oerr := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if oerr != nil {
			continue
		}
		if _, rerr := windows.ResumeThread(th); rerr == nil {
			resumed++
		}
		windows.CloseHandle(th)
	}
	if resumed == 0 {
		return errors.New("no thread of the server could be resumed")
	}
	return nil
}

func (t *Tree) Update() {}

func (t *Tree) Signal(sig Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch sig {
	case Terminate: // Ctrl-Break to the server's console process group
		// Reaches the server only if it shares the sidecar's console;
		// the kill that follows the grace period does not depend on it.
		windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, t.pid)
	case Kill: // the whole job
		if t.job != 0 {
			windows.TerminateJobObject(t.job, 1)
		} else if h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, t.pid); err == nil {
			windows.TerminateProcess(h, 1)
			windows.CloseHandle(h)
		}
	}
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type jobAccounting struct {
	TotalUserTime, TotalKernelTime                     int64
	ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime int64
	TotalPageFaultCount, TotalProcesses                uint32
	ActiveProcesses, TotalTerminatedProcesses          uint32
}

// Wait polls the job until no process of it is active, for at most d.
func (t *Tree) Wait(d time.Duration, resend Signal) bool {
	t.mu.Lock()
	job := t.job
	t.mu.Unlock()
	if job == 0 {
		return true
	}
	deadline := time.Now().Add(d)
	pause := 2 * time.Millisecond
	for {
		var acct jobAccounting
		err := windows.QueryInformationJobObject(job, windows.JobObjectBasicAccountingInformation,
			uintptr(unsafe.Pointer(&acct)), uint32(unsafe.Sizeof(acct)), nil)
		if err != nil || acct.ActiveProcesses == 0 {
			return err == nil
		}
		if resend == Kill {
			t.Signal(Kill)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Release closes the job: kill-on-close ends anything still in it.
func (t *Tree) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.job != 0 {
		windows.CloseHandle(t.job)
		t.job = 0
	}
}
