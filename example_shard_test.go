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

package informers_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// ExampleWithShardSelector shows client-go v0.38's sharding API: replica 0
// of 2 caches only the pods in the lower half of the UID hash space. The
// fake clientset ignores the selector, as a server without the
// ShardedListAndWatch feature does, so the factory filters on the client
// and says so in Notices.
func ExampleWithShardSelector() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pods []runtime.Object
	for i := range 8 {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: fmt.Sprintf("web-%d", i),
			UID: types.UID(fmt.Sprintf("0b5e%04d-0000-4000-8000-000000000000", i)),
		}})
	}
	// With apimachinery v0.38: sharding.NewShardRangeSelector("object.metadata.uid", 0, 2).
	// This module's sharding.ForShard is the same selector on v0.37.
	half, err := sharding.ForShard(sharding.FieldUID, 0, 2)
	if err != nil {
		panic(err)
	}
	sel := half.APISelector()
	factory, err := informers.New(fake.NewClientset(pods...), 0, informers.WithShardSelector(sel))
	if err != nil {
		panic(err)
	}
	lister := factory.Core().V1().Pods().Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	cached, _ := lister.List(labels.Everything())
	inShard := 0
	for _, p := range pods {
		if ok, _ := sel.Matches(p); ok {
			inShard++
		}
	}
	fmt.Println("selector:", sel)
	fmt.Println("cached:", len(cached), "of", len(pods), "- in the shard:", inShard)
	fmt.Println("notices:", len(factory.Notices()))
	cancel()
	factory.Shutdown()
	// Output:
	// selector: shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
	// cached: 5 of 8 - in the shard: 5
	// notices: 1
}
