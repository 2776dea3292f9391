/*
Copyright The kubeinformers Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// errAddrInUse marks a start that failed because a port was taken between
// picking it and the child binding it (see pickPorts).
var errAddrInUse = errors.New("address already in use")

// spawner starts child processes from one OS thread that never exits, so that
// Pdeathsig (SIGKILL when the parent thread dies) fires only when the test
// binary itself dies (panic, timeout, kill) and never because the Go runtime
// retired the thread that happened to fork the child.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: this thread lives as long as the process
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}

// process is one child (etcd or kube-apiserver) with its log file. It can be
// started again after it was stopped or after it exited on its own.
type process struct {
	name    string
	bin     string
	args    []string
	logPath string

	mu       sync.Mutex
	cmd      *exec.Cmd // nil when never started or stopped
	exited   chan struct{}
	waitErr  error
	logFile  *os.File
	logStart int64 // offset in logPath where this run's output begins
}

func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.exited:
			// It crashed (or exited) without stop: release what the old run
			// holds and start afresh.
			p.closeLogLocked("exited")
		default:
			return fmt.Errorf("%s already running (pid %d)", p.name, p.cmd.Process.Pid)
		}
	}
	if _, err := os.Stat(p.bin); err != nil {
		return fmt.Errorf("%s binary: %w (build it with hack/testenv/build.sh)", p.name, err)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "\n===== %s starting at %s: %s %s\n", p.name, time.Now().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("%s log: %w", p.name, err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := spawn(cmd); err != nil {
		_ = f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.logFile, p.logStart, p.exited, p.waitErr = cmd, f, off, exited, nil
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// closeLogLocked ends the current run's log section and forgets the run.
func (p *process) closeLogLocked(how string) {
	if p.logFile != nil {
		fmt.Fprintf(p.logFile, "\n===== %s %s at %s\n", p.name, how, time.Now().Format(time.RFC3339Nano))
		_ = p.logFile.Close()
	}
	p.cmd, p.logFile = nil, nil
}

// running reports whether the process was started and has not exited.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// exitedErr returns a non-nil error if the process was started and has
// exited. The error wraps errAddrInUse when this run's log says a port was
// taken.
func (p *process) exitedErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return fmt.Errorf("%s not started", p.name)
	}
	select {
	case <-p.exited:
	default:
		return nil
	}
	err := fmt.Errorf("%s exited with status 0", p.name)
	if p.waitErr != nil {
		err = fmt.Errorf("%s exited: %w", p.name, p.waitErr)
	}
	if strings.Contains(p.logSinceStartLocked(), errAddrInUse.Error()) {
		err = fmt.Errorf("%w: %w", err, errAddrInUse)
	}
	return err
}

// logSinceStartLocked returns what the current run wrote to the log.
func (p *process) logSinceStartLocked() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	b, _ := io.ReadAll(io.NewSectionReader(f, p.logStart, 1<<40))
	return string(b)
}

// stop sends sig to the process group, waits up to grace, then SIGKILLs it.
// A process that already exited is only cleaned up.
func (p *process) stop(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		// Already reaped: its pid (the group id) may belong to someone else now.
	default:
		_ = syscall.Kill(-cmd.Process.Pid, sig)
		select {
		case <-exited:
		case <-time.After(grace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, cmd.Process.Pid)
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == cmd { // not restarted meanwhile
		p.closeLogLocked("stopped")
	}
	return nil
}

// tail returns the last n lines of the process log.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "(no log)"
		}
		return "(read log: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
