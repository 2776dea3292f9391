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
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/dynamicinformer"
	"github.com/kubeinformers/informers/informertest"
)

// TestInformertestRealServer: informertest is a kit for fake clients. On
// factories over a real kube-apiserver, synced and running, Settle says so
// at once (ErrNotFake, naming the informer and the client) instead of
// waiting, and the informers keep running undisturbed.
func TestInformertestRealServer(t *testing.T) {
	c := setup(t)
	f, err := informers.New(c.client, 0, informers.WithNamespace(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(c.cfg), 0, c.ns, nil)
	ctx, cancel := context.WithCancel(c.ctx)
	defer func() {
		cancel()
		f.Shutdown()
		dyn.Shutdown()
	}()
	f.Core().V1().ConfigMaps().Informer()
	dyn.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Informer()
	f.Start(ctx.Done())
	dyn.Start(ctx.Done())
	if res := f.WaitForCacheSyncWithContext(ctx); res.Err != nil {
		t.Fatal(res.Err)
	}
	for name, factory := range map[string]informertest.Factory{"informers.New": f, "dynamicinformer": dyn} {
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		start := time.Now()
		err := informertest.Settle(sctx, factory)
		scancel()
		if !errors.Is(err, informertest.ErrNotFake) {
			t.Fatalf("%s: Settle over a real server = %v, want ErrNotFake", name, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("%s: Settle took %v to refuse", name, took)
		}
		if !strings.Contains(err.Error(), "is not one of client-go's fakes") {
			t.Fatalf("%s: the error does not say why: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	if !strings.Contains(informertest.Settle(ctx, f).Error(), "configmaps (v1)") {
		t.Fatal("the error does not name the informer")
	}
	if err := f.Ready(); err != nil {
		t.Fatalf("Ready after Settle's refusal: %v", err)
	}
}
