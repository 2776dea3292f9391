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

package conformance

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// recorder is what the fake dynamic and metadata clients have in common.
type recorder interface {
	Actions() []k8stesting.Action
}

// requests renders what reaches the server of every recorded request.
func requests(c recorder) []string {
	var out []string
	for _, a := range c.Actions() {
		s := fmt.Sprintf("%s %s ns=%q", a.GetVerb(), a.GetResource(), a.GetNamespace())
		switch a := a.(type) {
		case k8stesting.ListAction:
			s += fmt.Sprintf(" labels=%q fields=%q", a.GetListRestrictions().Labels, a.GetListRestrictions().Fields)
		case k8stesting.WatchAction:
			s += fmt.Sprintf(" labels=%q fields=%q", a.GetWatchRestrictions().Labels, a.GetWatchRestrictions().Fields)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestDifferentialDynamicAndMetadata: our dynamic and metadata informers
// make the same requests as client-go's dynamicinformer and
// metadatainformer, with the same namespace and tweak, and cache the same
// objects.
func TestDifferentialDynamicAndMetadata(t *testing.T) {
	objs := []runtime.Object{widget("a", "w1", "Widget"), widget("b", "w2", "Widget")}
	metas := []runtime.Object{podMeta("a", "p1"), podMeta("b", "p2")}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "app!=none" }
	for _, tc := range []struct {
		name      string
		namespace string
		tweak     func(*metav1.ListOptions)
	}{{"plain", "", nil}, {"namespace+tweak", "a", tweak}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(syncCtx(t))
			defer cancel()
			oursDyn, upDyn := newDynamic(objs...), newDynamic(objs...)
			oursMeta, upMeta := newMetadata(metas...), newMetadata(metas...)
			opts := []informers.SharedInformerOption{informers.WithDynamicClient(oursDyn), informers.WithMetadataClient(oursMeta)}
			if tc.namespace != "" {
				opts = append(opts, informers.WithNamespace(tc.namespace), informers.WithTweakListOptions(tc.tweak))
			}
			ours, err := informers.New(fake.NewClientset(), 0, opts...)
			if err != nil {
				t.Fatal(err)
			}
			upD := dynamicinformer.NewFilteredDynamicSharedInformerFactory(upDyn, 0, tc.namespace, dynamicinformer.TweakListOptionsFunc(tc.tweak))
			upM := metadatainformer.NewFilteredSharedInformerFactory(upMeta, 0, tc.namespace, metadatainformer.TweakListOptionsFunc(tc.tweak))
			// Shutdown waits for the informers to stop, so cancel first:
			// otherwise each Shutdown waits for syncCtx's deadline.
			defer func() {
				cancel()
				ours.Shutdown()
				upD.Shutdown()
				upM.Shutdown()
			}()

			ourW, err := ours.ForResource(widgetsGVR)
			if err != nil {
				t.Fatal(err)
			}
			ourP, err := ours.ForMetadata(podsGVR)
			if err != nil {
				t.Fatal(err)
			}
			upW, upP := upD.ForResource(widgetsGVR), upM.ForResource(podsGVR)
			ours.StartWithContext(ctx)
			upD.Start(ctx.Done())
			upM.Start(ctx.Done())
			mustSync(t, ctx, ours)
			upD.WaitForCacheSync(ctx.Done())
			upM.WaitForCacheSync(ctx.Done())

			for _, pair := range []struct {
				what       string
				ours, up   cache.SharedIndexInformer
				oursC, upC recorder
				gvr        schema.GroupVersionResource
			}{
				{"dynamic", ourW.Informer(), upW.Informer(), oursDyn, upDyn, widgetsGVR},
				{"metadata", ourP.Informer(), upP.Informer(), oursMeta, upMeta, podsGVR},
			} {
				// Both have listed and started their watch once synced.
				waitFor(t, ctx, func() bool { return len(pair.oursC.Actions()) >= 2 && len(pair.upC.Actions()) >= 2 })
				if got, want := requests(pair.oursC), requests(pair.upC); !slices.Equal(got, want) {
					t.Errorf("%s requests:\n ours     %q\n upstream %q", pair.what, got, want)
				}
				got, want := pair.ours.GetStore().List(), pair.up.GetStore().List()
				sortByKey(got)
				sortByKey(want)
				if !reflect.DeepEqual(got, want) || len(got) == 0 {
					t.Errorf("%s caches differ or are empty:\n ours     %v\n upstream %v", pair.what, got, want)
				}
				if len(got) != 0 && reflect.TypeOf(got[0]) != reflect.TypeOf(want[0]) {
					t.Errorf("%s cached %T, upstream %T", pair.what, got[0], want[0])
				}
			}
			if tc.namespace != "" && len(ourW.Informer().GetStore().List()) != 1 {
				t.Errorf("namespace %q: dynamic cache holds %d objects, want 1", tc.namespace, len(ourW.Informer().GetStore().List()))
			}
		})
	}
}

func sortByKey(objs []any) {
	slices.SortFunc(objs, func(a, b any) int {
		ka, _ := cache.MetaNamespaceKeyFunc(a)
		kb, _ := cache.MetaNamespaceKeyFunc(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
}
