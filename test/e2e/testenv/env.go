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

// Package testenv runs a real etcd and kube-apiserver on 127.0.0.1 for the
// e2e suite. Binaries come from hack/testenv/build.sh (see BinDir).
package testenv

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
)

const (
	// LimitedUser is the name of the non-admin token user.
	LimitedUser = "e2e-limited"
	// DefaultFeatureGates enables every alpha and beta API the server knows.
	DefaultFeatureGates = "AllAlpha=true,AllBeta=true"
)

// Options configure Start.
type Options struct {
	BinDir       string   // default BinDir()
	FeatureGates string   // default $E2E_FEATURE_GATES or DefaultFeatureGates
	ExtraArgs    []string // appended to the kube-apiserver command line
}

// Env is a running etcd + kube-apiserver pair.
type Env struct {
	Dir          string
	BinDir       string
	EtcdURL      string // http://127.0.0.1:port
	APIServerURL string // https://127.0.0.1:port
	AdminToken   string
	LimitedToken string
	CAData       []byte

	etcd      *process
	apiserver *process
	keepDir   bool
}

// BinDir returns where the binaries are expected: $E2E_BIN_DIR, else
// <repo>/.cache/testenv/bin.
func BinDir() string {
	if d := os.Getenv("E2E_BIN_DIR"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", ".cache", "testenv", "bin")
}

// startAttempts bounds how often Start picks new ports after a port conflict.
const startAttempts = 5

// pickPorts returns n distinct ports that were free a moment ago; a variable
// so that tests can hand out a taken port.
//
// Picking is inherently racy: the listeners are closed before etcd and
// kube-apiserver bind, and another process (a parallel test binary, the
// benchmark harness) may take a port in between. Handing the children the
// bound address instead is not possible: kube-apiserver treats
// --secure-port=0 as "do not serve HTTPS", and neither binary accepts an
// inherited listener. So Start detects the conflict instead (the child exits
// with "address already in use") and retries with new ports.
var pickPorts = func(n int) ([]int, error) {
	// Hold all listeners until every port is chosen, so they differ.
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testenv: pick a free port: %w", err)
		}
		defer func() { _ = l.Close() }()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Start launches etcd and kube-apiserver and waits until /readyz is ok.
// On error everything started so far is stopped and the error includes the
// log tails.
func Start(opts Options) (_ *Env, retErr error) {
	if opts.BinDir == "" {
		opts.BinDir = BinDir()
	}
	if opts.FeatureGates == "" {
		opts.FeatureGates = os.Getenv("E2E_FEATURE_GATES")
	}
	if opts.FeatureGates == "" {
		opts.FeatureGates = DefaultFeatureGates
	}
	bin, err := filepath.Abs(opts.BinDir)
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("testenv: missing binary %s: %w (run hack/testenv/build.sh or test/e2e/run.sh)", b, err)
		}
	}
	dir, err := os.MkdirTemp("", "kubeinformers-e2e-")
	if err != nil {
		return nil, err
	}
	e := &Env{Dir: dir, BinDir: bin, AdminToken: randToken(), LimitedToken: randToken(), keepDir: os.Getenv("E2E_KEEP_DIR") != ""}
	defer func() {
		if retErr != nil {
			e.keepDir = true // keep the logs named in the error
			retErr = fmt.Errorf("%w\n%s", retErr, e.LogTails(80))
			_ = e.Stop()
		}
	}()

	p, err := generatePKI(dir)
	if err != nil {
		return nil, fmt.Errorf("testenv: pki: %w", err)
	}
	e.CAData = p.CACertPEM
	tokens := fmt.Sprintf("%s,e2e-admin,e2e-admin-uid,\"system:masters\"\n%s,%s,e2e-limited-uid\n", e.AdminToken, e.LimitedToken, LimitedUser)
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		return nil, err
	}

	for attempt := 1; ; attempt++ {
		ports, err := pickPorts(3)
		if err != nil {
			return nil, err
		}
		e.configure(opts, p, tokenFile, ports[0], ports[1], ports[2])
		err = e.launch()
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, errAddrInUse) || attempt == startAttempts {
			return nil, fmt.Errorf("testenv: start (attempt %d of %d): %w", attempt, startAttempts, err)
		}
		// A port was taken after pickPorts chose it: start over on new
		// ports with an empty etcd (the old one may hold a half-written
		// member on the old peer URL).
		if err := e.stopProcesses(); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(filepath.Join(dir, "etcd-data")); err != nil {
			return nil, err
		}
	}
}

// configure sets the URLs and command lines for the given ports.
func (e *Env) configure(opts Options, p *pki, tokenFile string, clientPort, peerPort, apiPort int) {
	e.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	e.APIServerURL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	e.etcd = &process{
		name:    "etcd",
		bin:     filepath.Join(e.BinDir, "etcd"),
		logPath: filepath.Join(e.Dir, "etcd.log"),
		args: []string{
			"--name=e2e",
			"--data-dir=" + filepath.Join(e.Dir, "etcd-data"),
			"--listen-client-urls=" + e.EtcdURL,
			fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", peerPort),
		},
	}
	args := []string{
		"--etcd-servers=" + e.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(e.Dir, "certs"),
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.SAPublicKey,
		"--service-account-signing-key-file=" + p.SAPrivateKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--runtime-config=api/all=true",
		"--feature-gates=" + opts.FeatureGates,
		// No controller-manager runs: pods would need a default service account.
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
		// ConfigMaps are served without a watch cache: lists go to etcd (so
		// limit/continue paging really happens, the watch cache ignores limit
		// for resourceVersion=0) and watches go straight to etcd (so an etcd
		// compaction surfaces as 410 Gone to informers). Every other resource,
		// e.g. Secrets, keeps the watch cache.
		"--watch-cache-sizes=configmaps#0",
		"--profiling=false",
		"--v=1",
	}
	e.apiserver = &process{
		name:    "kube-apiserver",
		bin:     filepath.Join(e.BinDir, "kube-apiserver"),
		logPath: filepath.Join(e.Dir, "kube-apiserver.log"),
		args:    append(args, opts.ExtraArgs...),
	}
}

// launch starts etcd, then kube-apiserver, each waiting until healthy.
func (e *Env) launch() error {
	if err := e.StartEtcd(); err != nil {
		return err
	}
	return e.startAPIServer()
}

// Stop stops both processes (idempotent) and removes the temp dir unless
// E2E_KEEP_DIR is set.
func (e *Env) Stop() error {
	err := e.stopProcesses()
	if !e.keepDir && e.Dir != "" {
		_ = os.RemoveAll(e.Dir)
	}
	return err
}

func (e *Env) stopProcesses() error {
	var errs []error
	if e.apiserver != nil {
		errs = append(errs, e.apiserver.stop(syscall.SIGTERM, 15*time.Second))
	}
	if e.etcd != nil {
		errs = append(errs, e.etcd.stop(syscall.SIGTERM, 10*time.Second))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testenv stop: %w", err)
	}
	return nil
}

// KeepDir keeps the temp dir (with logs) after Stop, e.g. after a failure.
func (e *Env) KeepDir() { e.keepDir = true }

// StartEtcd starts etcd (on the same ports and data dir) and waits for /health.
func (e *Env) StartEtcd() error {
	if err := e.etcd.start(); err != nil {
		return err
	}
	return e.waitHTTP(e.etcd, e.EtcdURL+"/health", "", 60*time.Second)
}

// StopEtcd stops etcd with SIGTERM (SIGKILL after 10 s).
func (e *Env) StopEtcd() error { return e.etcd.stop(syscall.SIGTERM, 10*time.Second) }

// KillEtcd kills etcd with SIGKILL.
func (e *Env) KillEtcd() error { return e.etcd.stop(syscall.SIGKILL, 10*time.Second) }

func (e *Env) startAPIServer() error {
	if err := e.apiserver.start(); err != nil {
		return err
	}
	return e.WaitReady(120 * time.Second)
}

// RestartAPIServer stops kube-apiserver (SIGTERM, or SIGKILL if kill) and starts
// it again on the same port, waiting for /readyz.
func (e *Env) RestartAPIServer(kill bool) error {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	if err := e.apiserver.stop(sig, 20*time.Second); err != nil {
		return err
	}
	return e.startAPIServer()
}

// StopAPIServer stops kube-apiserver; StartAPIServer starts it again.
func (e *Env) StopAPIServer() error { return e.apiserver.stop(syscall.SIGTERM, 20*time.Second) }

// APIServerPID is the process ID of the running kube-apiserver, or 0 when
// it is not running: the scale harness reads its CPU time from /proc.
func (e *Env) APIServerPID() int {
	e.apiserver.mu.Lock()
	defer e.apiserver.mu.Unlock()
	if e.apiserver.cmd == nil || e.apiserver.cmd.Process == nil {
		return 0
	}
	return e.apiserver.cmd.Process.Pid
}

// StartAPIServer starts kube-apiserver and waits for /readyz.
func (e *Env) StartAPIServer() error { return e.startAPIServer() }

// WaitReady waits until kube-apiserver answers /readyz with 200.
func (e *Env) WaitReady(timeout time.Duration) error {
	return e.waitHTTP(e.apiserver, e.APIServerURL+"/readyz", e.AdminToken, timeout)
}

// Running reports whether the named process ("etcd" or "kube-apiserver") is up.
func (e *Env) Running(name string) bool {
	switch name {
	case "etcd":
		return e.etcd.running()
	default:
		return e.apiserver.running()
	}
}

func (e *Env) httpClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CAData)
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true},
	}
}

func (e *Env) waitHTTP(p *process, url, token string, timeout time.Duration) error {
	c := e.httpClient()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if err := p.exitedErr(); err != nil {
			return fmt.Errorf("testenv: waiting for %s: %w", url, err)
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testenv: %s not ready after %v: %s", url, timeout, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// CompactEtcd compacts etcd at its current revision and returns it.
func (e *Env) CompactEtcd(ctx context.Context) (int64, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{strings.TrimPrefix(e.EtcdURL, "http://")},
		DialTimeout: 5 * time.Second,
		Logger:      nopLogger(),
	})
	if err != nil {
		return 0, err
	}
	defer func() { _ = cli.Close() }()
	resp, err := cli.Get(ctx, "/kubeinformers-e2e-compact-probe")
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	return rev, nil
}

func (e *Env) restConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            e.APIServerURL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), e.CAData...)},
		QPS:             500,
		Burst:           1000,
		Timeout:         0,
	}
}

// AdminConfig returns a fresh config for a system:masters user.
func (e *Env) AdminConfig() *rest.Config { return e.restConfig(e.AdminToken) }

// LimitedConfig returns a fresh config for LimitedUser (no permissions unless granted by RBAC).
func (e *Env) LimitedConfig() *rest.Config { return e.restConfig(e.LimitedToken) }

// LogTails returns the last n lines of both process logs.
func (e *Env) LogTails(n int) string {
	var b strings.Builder
	for _, p := range []*process{e.etcd, e.apiserver} {
		if p == nil {
			continue
		}
		fmt.Fprintf(&b, "----- last %d lines of %s (%s) -----\n%s\n", n, p.name, p.logPath, p.tail(n))
	}
	return b.String()
}
