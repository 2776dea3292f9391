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
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeEnvVar makes the test binary act as a fake etcd or kube-apiserver, so
// that Start, its port-conflict retry and restarts are tested without the
// real binaries: the fakes bind the ports from the real command lines (and
// fail the same way when one is taken) and answer the health checks.
const fakeEnvVar = "TESTENV_FAKE_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeEnvVar) {
	case "":
		os.Exit(m.Run())
	case "etcd":
		runFake(fakeEtcd(os.Args[1:]))
	case "kube-apiserver":
		runFake(fakeAPIServer(os.Args[1:]))
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", fakeEnvVar, os.Getenv(fakeEnvVar))
		os.Exit(2)
	}
}

func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

func listenURL(raw string) (net.Listener, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	return net.Listen("tcp", u.Host)
}

// fakeEtcd binds the peer and client URLs like etcd and serves /health.
func fakeEtcd(args []string) (func() error, error) {
	peer, err := listenURL(flagValue(args, "listen-peer-urls"))
	if err != nil {
		return nil, err
	}
	client, err := listenURL(flagValue(args, "listen-client-urls"))
	if err != nil {
		_ = peer.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"health":"true"}`) })
	return func() error { _ = peer.Close(); return http.Serve(client, mux) }, nil
}

// fakeAPIServer serves /readyz over TLS on --secure-port with the serving
// certificate, for bearer tokens from --token-auth-file only.
func fakeAPIServer(args []string) (func() error, error) {
	cert, err := tls.LoadX509KeyPair(flagValue(args, "tls-cert-file"), flagValue(args, "tls-private-key-file"))
	if err != nil {
		return nil, err
	}
	tokens, err := os.ReadFile(flagValue(args, "token-auth-file"))
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(flagValue(args, "bind-address"), flagValue(args, "secure-port")))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" || !strings.Contains(string(tokens), tok+",") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "ok")
	})
	return func() error {
		return http.Serve(tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), mux)
	}, nil
}

// runFake reports a bind error the way the real binaries do (the message
// includes "bind: address already in use") and exits 1; otherwise it
// serves until SIGTERM.
func runFake(serve func() error, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake server: %v\n", err)
		os.Exit(1)
	}
	if err := serve(); err != nil {
		fmt.Fprintf(os.Stderr, "fake server: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// fakeBinDir returns a directory whose etcd and kube-apiserver run this
// test binary as the fakes.
func fakeBinDir(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		script := fmt.Sprintf("#!/bin/sh\n%s=%s exec %q \"$@\"\n", fakeEnvVar, name, self)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func stopOnCleanup(t *testing.T, e *Env) {
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
}

func shProcess(t *testing.T, script string) *process {
	t.Helper()
	return &process{name: "sh", bin: "/bin/sh", args: []string{"-c", script}, logPath: filepath.Join(t.TempDir(), "sh.log")}
}

func waitExited(t *testing.T, p *process) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if err := p.exitedErr(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not exit", p.name)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestProcessRestartAfterCrash: a process that exited on its own can be
// started again without stop, and so can one that was killed.
func TestProcessRestartAfterCrash(t *testing.T) {
	p := shProcess(t, "exit 3")
	for run := 1; run <= 2; run++ {
		if err := p.start(); err != nil {
			t.Fatalf("start #%d: %v", run, err)
		}
		err := waitExited(t, p)
		if !strings.Contains(err.Error(), "exit status 3") {
			t.Errorf("run #%d: exitedErr = %v, want exit status 3", run, err)
		}
		if p.running() {
			t.Errorf("run #%d: running() after exit", run)
		}
	}
	if err := p.stop(syscall.SIGTERM, time.Second); err != nil {
		t.Errorf("stop of an exited process: %v", err)
	}

	s := shProcess(t, "exec sleep 60")
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	if !s.running() {
		t.Fatal("sleep not running")
	}
	if err := s.start(); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second start of a running process: %v, want already running", err)
	}
	// A crash as the e2e tests see it: killed behind the harness's back.
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitExited(t, s); !strings.Contains(err.Error(), "killed") {
		t.Errorf("exitedErr after SIGKILL = %v", err)
	}
	if err := s.start(); err != nil {
		t.Fatalf("start after crash: %v", err)
	}
	if !s.running() {
		t.Error("not running after restart")
	}
	if err := s.stop(syscall.SIGTERM, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if s.running() {
		t.Error("running after stop")
	}
	log, err := os.ReadFile(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "===== sh starting"); n != 2 {
		t.Errorf("log has %d start markers, want 2:\n%s", n, log)
	}
}

// TestExitedErrAddrInUse: only the current run's log decides whether an
// exit was a port conflict.
func TestExitedErrAddrInUse(t *testing.T) {
	p := shProcess(t, "echo 'listen tcp 127.0.0.1:1: bind: address already in use' >&2; exit 1")
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	if err := waitExited(t, p); !errors.Is(err, errAddrInUse) {
		t.Errorf("exitedErr = %v, want errAddrInUse", err)
	}
	p.args = []string{"-c", "exit 2"}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	if err := waitExited(t, p); errors.Is(err, errAddrInUse) || !strings.Contains(err.Error(), "exit status 2") {
		t.Errorf("exitedErr of the next run = %v, want exit status 2 without errAddrInUse", err)
	}
}

// TestStartRetriesOnPortConflict hands Start a port that is taken, for etcd
// and then for kube-apiserver, and expects it to start on new ports.
func TestStartRetriesOnPortConflict(t *testing.T) {
	bin := fakeBinDir(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	takenPort := taken.Addr().(*net.TCPAddr).Port

	orig := pickPorts
	defer func() { pickPorts = orig }()
	for i, component := range []string{"etcd client", "etcd peer", "kube-apiserver"} {
		t.Run(component, func(t *testing.T) {
			calls := 0
			pickPorts = func(n int) ([]int, error) {
				calls++
				ports, err := orig(n)
				if calls == 1 && err == nil {
					ports[i] = takenPort
				}
				return ports, err
			}
			e, err := Start(Options{BinDir: bin})
			if err != nil {
				t.Fatal(err)
			}
			stopOnCleanup(t, e)
			if calls != 2 {
				t.Errorf("picked ports %d times, want 2 (one conflict, one retry)", calls)
			}
			for _, u := range []string{e.EtcdURL, e.APIServerURL} {
				if strings.HasSuffix(u, ":"+strconv.Itoa(takenPort)) {
					t.Errorf("started on the taken port: %s", u)
				}
			}
			if !e.Running("etcd") || !e.Running("kube-apiserver") {
				t.Error("not both processes running")
			}
		})
	}
}

// TestStartDoesNotRetryOtherFailures: a child failing for another reason
// fails Start at once, with its log in the error.
func TestStartDoesNotRetryOtherFailures(t *testing.T) {
	bin := t.TempDir()
	for name, script := range map[string]string{
		"etcd":           "#!/bin/sh\necho 'etcd: corrupt data dir' >&2\nexit 7\n",
		"kube-apiserver": "#!/bin/sh\nexit 0\n",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	orig := pickPorts
	defer func() { pickPorts = orig }()
	calls := 0
	pickPorts = func(n int) ([]int, error) { calls++; return orig(n) }
	e, err := Start(Options{BinDir: bin})
	if err == nil {
		stopOnCleanup(t, e)
		t.Fatal("Start succeeded with a failing etcd")
	}
	if calls != 1 {
		t.Errorf("picked ports %d times, want 1", calls)
	}
	if !strings.Contains(err.Error(), "exit status 7") || !strings.Contains(err.Error(), "corrupt data dir") {
		t.Errorf("error lacks the exit status or the log: %v", err)
	}
}

// TestEnvRestartAfterCrash: after a component dies behind the harness's back,
// Running reports it and StartAPIServer / StartEtcd bring it back on the same
// URLs; RestartAPIServer works with and without kill.
func TestEnvRestartAfterCrash(t *testing.T) {
	e, err := Start(Options{BinDir: fakeBinDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, e)
	etcdURL, apiURL := e.EtcdURL, e.APIServerURL
	crash := func(p *process) {
		t.Helper()
		p.mu.Lock()
		pid := p.cmd.Process.Pid
		p.mu.Unlock()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = waitExited(t, p)
	}

	crash(e.apiserver)
	if e.Running("kube-apiserver") {
		t.Fatal("Running(kube-apiserver) after a crash")
	}
	if err := e.StartAPIServer(); err != nil {
		t.Fatalf("StartAPIServer after a crash: %v", err)
	}
	crash(e.etcd)
	if e.Running("etcd") {
		t.Fatal("Running(etcd) after a crash")
	}
	if err := e.StartEtcd(); err != nil {
		t.Fatalf("StartEtcd after a crash: %v", err)
	}
	for _, kill := range []bool{false, true} {
		if err := e.RestartAPIServer(kill); err != nil {
			t.Fatalf("RestartAPIServer(kill=%v): %v", kill, err)
		}
	}
	if e.EtcdURL != etcdURL || e.APIServerURL != apiURL {
		t.Errorf("URLs changed across restarts: %s %s -> %s %s", etcdURL, apiURL, e.EtcdURL, e.APIServerURL)
	}
	if err := e.WaitReady(10 * time.Second); err != nil {
		t.Error(err)
	}
	if err := e.Stop(); err != nil {
		t.Error(err)
	}
	if e.Running("etcd") || e.Running("kube-apiserver") {
		t.Error("running after Stop")
	}
}
