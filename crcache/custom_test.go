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

package crcache

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	informers "github.com/kubeinformers/informers"
)

// listAndWatch says it does not stream a watch-list, as the fake it lists
// and watches through cannot.
type listAndWatch struct{ toolscache.ListerWatcher }

func (listAndWatch) IsWatchListSemanticsUnSupported() bool { return true }

// TestNewInformerGetsFactoryTweakAndTransform: the informers of
// Options.NewInformer list and watch with the factory options' tweak and
// run their transform, as the factory's informers do.
func TestNewInformerGetsFactoryTweakAndTransform(t *testing.T) {
	k := &kinds{}
	newInformer := func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(listAndWatch{lw}, obj, resync, indexers)
	}
	c, _ := startWithFakes(t, cache.Options{NewInformer: newInformer},
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "team=a" }),
		informers.WithTransform(k.transform))
	ctx, cancel := context.WithTimeout(context.Background(), wait.ForeverTestTimeout)
	defer cancel()
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(podGVK)
	if _, err := c.GetInformer(ctx, obj); err != nil {
		t.Fatalf("GetInformer: %v", err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("not synced")
	}
	if len(k.get()) == 0 {
		t.Error("the factory options' transform did not run")
	}
	var lists int
	for _, a := range c.metadata.(*metadatafake.FakeMetadataClient).Actions() {
		if l, ok := a.(clienttesting.ListAction); ok {
			lists++
			if got := l.GetListRestrictions().Labels.String(); got != "team=a" {
				t.Errorf("list with label selector %q, want the tweak's %q", got, "team=a")
			}
		}
	}
	if lists == 0 {
		t.Error("no list")
	}
}
