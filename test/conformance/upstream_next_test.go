//go:build kubeinformers_next

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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	upstream "k8s.io/client-go/informers"
	upstreamcorev1 "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// This file needs client-go v0.38 or later (its sharding API): the next
// lane (hack/next.sh) runs it with -tags kubeinformers_next.

// TestDifferentialShardSelector: client-go's factory with its
// WithShardSelector and ours with the same option, and with WithShard(field, i, n)
// against NewShardRangeSelector, send the same ShardSelector on every list
// and watch of pods, and cache the same pods (the fake ignores the
// selector: both filter on the client).
func TestDifferentialShardSelector(t *testing.T) {
	uidShard := func(i, n int) apisharding.Selector {
		s, err := apisharding.NewShardRangeSelector("object.metadata.uid", i, n)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		up   apisharding.Selector
		ours informers.SharedInformerOption
	}{
		{"WithShardSelector", twoRanges(), informers.WithShardSelector(twoRanges())},
		{"WithShard(sharding.FieldUID, 1, 3)", uidShard(1, 3), informers.WithShard(sharding.FieldUID, 1, 3)},
		{"WithShard(sharding.FieldUID, 2, 3)", uidShard(2, 3), informers.WithShard(sharding.FieldUID, 2, 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(syncCtx(t))
			defer cancel()
			pods := podsIn(40, "a")
			upClient, ourClient := fake.NewClientset(pods...), fake.NewClientset(pods...)
			up := upstream.NewSharedInformerFactoryWithOptions(upClient, 0, upstream.WithShardSelector(tc.up))
			ours, err := informers.New(ourClient, 0, tc.ours)
			if err != nil {
				t.Fatal(err)
			}
			upInf, ourInf := up.Core().V1().Pods().Informer(), ours.Core().V1().Pods().Informer()
			up.Start(ctx.Done())
			ours.Start(ctx.Done())
			defer func() { cancel(); up.Shutdown(); ours.Shutdown() }()
			mustSync(t, ctx, up)
			mustSync(t, ctx, ours)
			if got, want := storeKeys(ourInf.GetStore()), storeKeys(upInf.GetStore()); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("ours caches %q, client-go %q", got, want)
			}
			upSel, ourSel := shardSelectors(upClient.Actions(), "pods"), shardSelectors(ourClient.Actions(), "pods")
			if len(upSel) == 0 || len(ourSel) == 0 {
				t.Fatalf("requests: client-go %q, ours %q", upSel, ourSel)
			}
			for _, s := range append(upSel, ourSel...) {
				if _, sel, _ := strings.Cut(s, " "); sel != tc.up.String() {
					t.Errorf("%q, want the selector %q", s, tc.up.String())
				}
			}
		})
	}
}

// TestInformerForShardedOnNext: from client-go v0.38 on, an informer built
// by InformerFor's newFunc takes the factory's shard through client-go's
// own SetShardSelector, as client-go's factory does.
func TestInformerForShardedOnNext(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer cancel()
	client := fake.NewClientset()
	f, err := informers.New(client, 0, informers.WithShard(sharding.FieldUID, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); f.Shutdown() }()
	f.InformerFor(&corev1.Secret{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return upstreamcorev1.NewSecretInformer(c, metav1.NamespaceAll, resync, cache.Indexers{})
	})
	f.Start(ctx.Done())
	mustSync(t, ctx, f)
	want, _ := apisharding.NewShardRangeSelector("object.metadata.uid", 0, 2)
	sels := shardSelectors(client.Actions(), "secrets")
	if len(sels) == 0 {
		t.Fatal("no list of secrets recorded")
	}
	for _, s := range sels {
		if _, sel, _ := strings.Cut(s, " "); sel != want.String() {
			t.Errorf("%q, want %q", s, want.String())
		}
	}
}
