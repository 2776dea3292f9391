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

// Package e2e runs the informer library against a real kube-apiserver and etcd
// started by the testenv harness. Run it through test/e2e/run.sh.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/test/e2e/testenv"
)

var (
	env    *testenv.Env
	envErr error
)

func TestMain(m *testing.M) {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", os.Getenv("E2E_KLOG_V")) // quiet unless asked
	if os.Getenv("E2E_KLOG_V") == "" {
		_ = klogFlags.Set("v", "0")
	}
	flag.Parse()

	env, envErr = testenv.Start(testenv.Options{})
	if envErr != nil {
		// Not fatal here: every test fails with this error (never a skip).
		fmt.Fprintf(os.Stderr, "e2e: test environment failed to start: %v\n", envErr)
	}

	// Stop children on SIGINT/SIGTERM too (a panic or a kill of this binary is
	// covered by Pdeathsig on the children).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		if env != nil {
			_ = env.Stop()
		}
		fmt.Fprintf(os.Stderr, "e2e: got %v, stopped test environment\n", s)
		os.Exit(1)
	}()

	code := m.Run()
	if env != nil {
		if code != 0 {
			env.KeepDir()
			fmt.Fprintf(os.Stderr, "e2e: failures; logs kept in %s\n", env.Dir)
		}
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
