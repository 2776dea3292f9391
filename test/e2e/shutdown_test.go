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

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

func TestCleanShutdownNoLeaks(t *testing.T) {
	c := setup(t)
	for i := 0; i < 5; i++ {
		mkCM(t, c, c.ns, fmt.Sprintf("cm-%d", i), nil)
	}
	// Everything running now (harness, other clients) is not ours to judge.
	ignore := goleak.IgnoreCurrent()

	cc := &connCounter{}
	cfg := cc.install(env.AdminConfig())
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(c.ns))
	got := make(chan string, 100)
	for _, inf := range []cache.SharedIndexInformer{
		f.Core().V1().ConfigMaps().Informer(),
		f.Core().V1().Secrets().Informer(),
		f.Apps().V1().Deployments().Informer(),
		f.Rbac().V1().Roles().Informer(),
		f.Batch().V1().Jobs().Informer(),
	} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			k, _ := key(obj)
			select {
			case got <- k:
			default:
			}
		}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	syncFactory(t, ctx, f)
	mkCM(t, c, c.ns, "after-sync", nil)
	deadline := time.After(30 * time.Second)
wait:
	for {
		select {
		case k := <-got:
			if k == c.ns+"/after-sync" {
				break wait
			}
		case <-deadline:
			t.Fatal("informer never saw after-sync")
		}
	}
	if cc.open.Load() == 0 {
		t.Fatal("connection counter saw no open connections while informers run")
	}
	t.Logf("while running: %d open connections (%d dialed)", cc.open.Load(), cc.dialed.Load())

	cancel()
	done := make(chan struct{})
	go func() { f.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("factory.Shutdown did not return within 30s")
	}
	// The transport is wrapped by client-go round trippers; this unwraps them.
	// Streams are torn down asynchronously, so a connection may become idle
	// a moment after Shutdown returns: close idle ones until none is left.
	if !eventually(10*time.Second, 50*time.Millisecond, func() bool {
		utilnet.CloseIdleConnectionsFor(httpClient.Transport)
		return cc.open.Load() == 0
	}) {
		t.Errorf("%d connections still open after Shutdown + CloseIdleConnections", cc.open.Load())
	}
	goleak.VerifyNone(t, ignore)
}
