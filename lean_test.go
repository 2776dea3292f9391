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

package informers

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// leanTestPod returns a Pod like those of ReplicaSet rs: every string is
// freshly allocated, as a decoder would, so that interning has work to do.
func leanTestPod(rs, i int) *corev1.Pod {
	s := func(format string, a ...any) string { return strings.Clone(fmt.Sprintf(format, a...)) }
	ns := s("ns-%d", rs%2)
	hash := s("hash%d", rs)
	cpu := "250m"
	if rs == 2 {
		cpu = "0.25" // the same quantity, spelt differently
	}
	grace := int64(30)
	links := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              s("app-%d-%d", rs, i),
			Namespace:         ns,
			GenerateName:      s("app-%d-", rs),
			UID:               types.UID(s("uid-%d-%d", rs, i)),
			ResourceVersion:   s("%d", 100+i),
			CreationTimestamp: metav1.NewTime(time.Unix(1700000000+int64(i), 0)),
			Labels:            map[string]string{s("app"): s("app-%d", rs), s("pod-template-hash"): hash, s("tier"): s("web")},
			Annotations:       map[string]string{s("prometheus.io/scrape"): s("true"), s("checksum/config"): s("c%d", rs)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: s("apps/v1"), Kind: s("ReplicaSet"), Name: s("app-%d", rs),
				UID: types.UID(s("rs-uid-%d", rs)), Controller: &links, BlockOwnerDeletion: &links,
			}},
			Finalizers: []string{s("example.com/guard")},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: s("bench"), Operation: metav1.ManagedFieldsOperationApply, APIVersion: s("v1"),
				FieldsType: s("FieldsV1"), FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      s("node-%d", i%3),
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            &links,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			Tolerations:                   []corev1.Toleration{{Key: s("node.kubernetes.io/not-ready"), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			Volumes:                       []corev1.Volume{{Name: s("config"), VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s("cfg-%d", rs)}}}}},
			Containers: []corev1.Container{
				{
					Name:  s("app"),
					Image: s("registry.example/app:v%d", rs),
					Env: []corev1.EnvVar{
						{Name: s("MODE"), Value: s("prod")},
						{Name: s("POD_NAME"), ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: s("v1"), FieldPath: s("metadata.name")}}},
					},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: s("config"), MountPath: s("/etc/app")}},
				},
				{Name: s("sidecar"), Image: s("registry.example/proxy:1.0"), Args: []string{s("--port=15001")}},
			},
		},
		Status: corev1.PodStatus{
			Phase:   corev1.PodRunning,
			HostIP:  s("10.0.0.%d", i%3),
			HostIPs: []corev1.HostIP{{IP: s("10.0.0.%d", i%3)}},
			PodIP:   s("10.1.%d.%d", rs, i),
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Unix(1700000100+int64(i), 0))},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: s("app"), Image: s("registry.example/app:v%d", rs), ImageID: s("sha256:%d", rs), ContainerID: s("containerd://%d-%d", rs, i)}},
		},
	}
	return p
}

// leanTestPods returns Pods of three ReplicaSets plus odd ones: no labels,
// an empty labels map, init containers, kubectl's last-applied annotation.
func leanTestPods() []runtime.Object {
	var objs []runtime.Object
	for rs := range 3 {
		for i := range 20 {
			objs = append(objs, leanTestPod(rs, i))
		}
	}
	bare := leanTestPod(3, 0)
	bare.Labels, bare.Annotations, bare.OwnerReferences, bare.Finalizers, bare.ManagedFields = nil, nil, nil, nil, nil
	bare.Spec.Tolerations, bare.Spec.Volumes, bare.Status = nil, nil, corev1.PodStatus{}
	empty := leanTestPod(3, 1)
	empty.Labels = map[string]string{}
	initc := leanTestPod(3, 2)
	initc.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Command: []string{"sh", "-c", "true"}}}
	applied := leanTestPod(3, 3)
	applied.Annotations[corev1.LastAppliedConfigAnnotation] = `{"apiVersion":"v1","kind":"Pod"}`
	return append(objs, bare, empty, initc, applied)
}

// syncedPodLister starts a Pod informer of a new factory over client.
func syncedPodLister(t *testing.T, ctx context.Context, client *fake.Clientset, options ...SharedInformerOption) cache.Indexer {
	t.Helper()
	f, err := New(client, 0, options...)
	if err != nil {
		t.Fatal(err)
	}
	inf := f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	t.Cleanup(f.Shutdown)
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	return inf.GetIndexer()
}

// firstDiff names the first field where a and b differ semantically, for
// a failure message a person can act on.
func firstDiff(path string, a, b reflect.Value) string {
	if a.IsValid() && b.IsValid() && a.CanInterface() && equality.Semantic.DeepEqual(a.Interface(), b.Interface()) {
		return ""
	}
	switch {
	case !a.IsValid() || !b.IsValid() || a.Kind() != b.Kind():
		return path
	case a.Kind() == reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return path
		}
		return firstDiff(path, a.Elem(), b.Elem())
	case a.Kind() == reflect.Struct:
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if d := firstDiff(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); d != "" {
				return d
			}
		}
	case a.Kind() == reflect.Slice && a.Len() == b.Len():
		for i := range a.Len() {
			if d := firstDiff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); d != "" {
				return d
			}
		}
	}
	return fmt.Sprintf("%s: %v != %v", path, a.Interface(), b.Interface())
}

// TestLeanListerMatchesFull compares, field by field, what a lean cache and
// a full one return for the same Pods: equal except managedFields (and,
// with LeanDropLastApplied, that one annotation).
func TestLeanListerMatchesFull(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	objs := leanTestPods()
	client := fake.NewClientset(objs...)

	full := syncedPodLister(t, ctx, client)
	lean := syncedPodLister(t, ctx, client, WithLeanMemory(LeanInterning(true)))
	dropped := syncedPodLister(t, ctx, client, WithLeanMemory(LeanDropLastApplied()))

	if got, want := len(lean.List()), len(objs); got != want || len(full.List()) != want || len(dropped.List()) != want {
		t.Fatalf("cached %d lean, %d full, %d dropped Pods; want %d each", got, len(full.List()), len(dropped.List()), want)
	}
	for _, key := range full.ListKeys() {
		fo, _, _ := full.GetByKey(key)
		lo, _, _ := lean.GetByKey(key)
		do, _, _ := dropped.GetByKey(key)
		fp, lp, dp := fo.(*corev1.Pod), lo.(*corev1.Pod), do.(*corev1.Pod)
		if lp.ManagedFields != nil || dp.ManagedFields != nil {
			t.Errorf("%s: lean cache kept managedFields", key)
		}
		want := fp.DeepCopy()
		want.ManagedFields = nil
		if !equality.Semantic.DeepEqual(want, lp) {
			t.Errorf("%s: lean Pod differs from the full one at %s", key, firstDiff("Pod", reflect.ValueOf(want), reflect.ValueOf(lp)))
		}
		delete(want.Annotations, corev1.LastAppliedConfigAnnotation)
		if len(want.Annotations) == 0 && want.Annotations != nil && dp.Annotations == nil {
			want.Annotations = nil
		}
		if !equality.Semantic.DeepEqual(want, dp) {
			t.Errorf("%s: lean Pod (LeanDropLastApplied) differs from the full one at %s", key, firstDiff("Pod", reflect.ValueOf(want), reflect.ValueOf(dp)))
		}
		if _, ok := lp.Annotations[corev1.LastAppliedConfigAnnotation]; ok != (key == "ns-1/app-3-3") {
			t.Errorf("%s: last-applied annotation present=%v without LeanDropLastApplied", key, ok)
		}
	}

	// The test must be able to tell sharing from copying: Pods of one
	// ReplicaSet share their containers and labels in the lean cache only.
	get := func(idx cache.Indexer, key string) *corev1.Pod {
		o, _, _ := idx.GetByKey(key)
		return o.(*corev1.Pod)
	}
	a, b := get(lean, "ns-0/app-0-1"), get(lean, "ns-0/app-0-2")
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] {
		t.Error("lean Pods of one ReplicaSet do not share their containers")
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("lean Pods of one ReplicaSet do not share their labels map")
	}
	if unsafe.StringData(a.Spec.NodeName) != unsafe.StringData(get(lean, "ns-0/app-0-4").Spec.NodeName) {
		t.Error("node names are not interned")
	}
	fa, fb := get(full, "ns-0/app-0-1"), get(full, "ns-0/app-0-2")
	if &fa.Spec.Containers[0] == &fb.Spec.Containers[0] {
		t.Error("the full cache shares containers: the comparison proves nothing")
	}
	// ReplicaSets 0 and 2 spell the same CPU request differently; neither
	// borrows the other's spelling.
	c0 := get(lean, "ns-0/app-0-1").Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	c2 := get(lean, "ns-0/app-2-1").Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
	if c0.Cmp(c2) != 0 {
		t.Errorf("cpu requests %v and %v should be equal", &c0, &c2)
	}
}

// TestLeanAfterUserTransform checks the documented order: the user's
// transform sees the whole object, the lean one runs on its result.
func TestLeanAfterUserTransform(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := fake.NewClientset(leanTestPod(0, 0), leanTestPod(0, 1))
	var mu sync.Mutex
	sawManagedFields := 0
	user := func(obj any) (any, error) {
		p := obj.(*corev1.Pod)
		mu.Lock()
		if len(p.ManagedFields) > 0 {
			sawManagedFields++
		}
		mu.Unlock()
		p.Labels = map[string]string{"seen-by-user": "yes"}
		return p, nil
	}
	idx := syncedPodLister(t, ctx, client, WithTransform(user), WithLeanMemory())
	mu.Lock()
	defer mu.Unlock()
	if sawManagedFields != 2 {
		t.Errorf("the user transform saw managedFields on %d of 2 Pods; it must run first", sawManagedFields)
	}
	for _, o := range idx.List() {
		p := o.(*corev1.Pod)
		if p.Labels["seen-by-user"] != "yes" || p.ManagedFields != nil {
			t.Errorf("%s: labels %v, managedFields %d: want the user's label and no managedFields", p.Name, p.Labels, len(p.ManagedFields))
		}
	}
}

func TestTransformStripManagedFields(t *testing.T) {
	strip := TransformStripManagedFields()
	mf := []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply}}

	pod := leanTestPod(0, 0)
	want := pod.DeepCopy()
	want.ManagedFields = nil
	if got, err := strip(pod); err != nil || !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("Pod: got %v, %v; want only managedFields gone", got, err)
	}

	pom := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", ManagedFields: mf}}
	if got, _ := strip(pom); got.(*metav1.PartialObjectMetadata).ManagedFields != nil {
		t.Error("PartialObjectMetadata kept managedFields")
	}

	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}}
	u.SetManagedFields(mf)
	got, _ := strip(u)
	if _, found, _ := unstructured.NestedFieldNoCopy(got.(*unstructured.Unstructured).Object, "metadata", "managedFields"); found {
		t.Error("Unstructured kept managedFields")
	}

	tomb := cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", ManagedFields: mf}}}
	got, _ = strip(tomb)
	gt, ok := got.(cache.DeletedFinalStateUnknown)
	if !ok || gt.Key != "ns/x" || gt.Obj.(*metav1.PartialObjectMetadata).ManagedFields != nil {
		t.Errorf("tombstone: got %#v; want the same key and its object stripped", got)
	}

	if got, err := strip("not an object"); err != nil || got != "not an object" {
		t.Errorf("a non-object: got %v, %v; want it unchanged", got, err)
	}
}

// TestLeanInternOnly: with managedFields kept and sharing off, the lean
// transform only interns: it changes no value and shares no structure.
func TestLeanInternOnly(t *testing.T) {
	intern := TransformLean(LeanKeepManagedFields(), LeanNoShare())
	a, b := leanTestPod(1, 1), leanTestPod(1, 2)
	wantA := a.DeepCopy()
	if unsafe.StringData(a.Spec.Containers[0].Image) == unsafe.StringData(b.Spec.Containers[0].Image) {
		t.Fatal("test Pods already share strings")
	}
	for _, p := range []*corev1.Pod{a, b} {
		if _, err := intern(p); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(a, wantA) {
		t.Errorf("interning changed the Pod at %s", firstDiff("Pod", reflect.ValueOf(wantA), reflect.ValueOf(a)))
	}
	same := func(what, x, y string) {
		if unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s not interned", what)
		}
	}
	same("image", a.Spec.Containers[0].Image, b.Spec.Containers[0].Image)
	same("env name", a.Spec.Containers[0].Env[1].Name, b.Spec.Containers[0].Env[1].Name)
	same("namespace", a.Namespace, b.Namespace)
	same("label value", a.Labels["pod-template-hash"], b.Labels["pod-template-hash"])
	same("owner kind", a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind)
	same("condition type", string(a.Status.Conditions[0].Type), string(b.Status.Conditions[0].Type))
	if a.ManagedFields == nil {
		t.Error("LeanKeepManagedFields: managedFields dropped")
	}
	if &a.Spec.Containers[0] == &b.Spec.Containers[0] {
		t.Error("LeanNoShare: containers shared; it should only intern")
	}
}

// TestLeanDropLastAppliedCopies checks that dropping the annotation never
// edits a map another object may share.
func TestLeanDropLastAppliedCopies(t *testing.T) {
	ann := map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "me"}
	p := leanTestPod(0, 0)
	p.Annotations = ann
	if _, err := TransformLean(LeanDropLastApplied())(p); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Annotations[corev1.LastAppliedConfigAnnotation]; ok || p.Annotations["keep"] != "me" {
		t.Errorf("annotations %v: want only last-applied dropped", p.Annotations)
	}
	if len(ann) != 2 {
		t.Errorf("the original annotations map was edited in place: %v", ann)
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAnnotations(map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "me"})
	if _, err := TransformLean(LeanDropLastApplied())(u); err != nil {
		t.Fatal(err)
	}
	if got := u.GetAnnotations(); len(got) != 1 || got["keep"] != "me" {
		t.Errorf("Unstructured annotations %v: want only last-applied dropped", got)
	}
}

// TestLeanConcurrent runs one lean transform from several goroutines, as
// the informers of one factory do; -race checks the sharing tables.
func TestLeanConcurrent(t *testing.T) {
	lean := TransformLean()
	const workers, perWorker = 4, 50
	results := make([][]*corev1.Pod, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				p := leanTestPod(i%3, i)
				if _, err := lean(p); err != nil {
					t.Error(err)
					return
				}
				results[w] = append(results[w], p)
			}
		})
	}
	wg.Wait()
	for w := range workers {
		for i, p := range results[w] {
			want := leanTestPod(i%3, i)
			want.ManagedFields = nil
			if !equality.Semantic.DeepEqual(want, p) {
				t.Fatalf("worker %d Pod %d differs at %s", w, i, firstDiff("Pod", reflect.ValueOf(want), reflect.ValueOf(p)))
			}
		}
	}
}

// TestLeanMetadata covers metadata-only objects, what ForMetadata caches.
func TestLeanMetadata(t *testing.T) {
	lean := TransformLean()
	mk := func(i int) *metav1.PartialObjectMetadata {
		p := leanTestPod(0, i)
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: p.ObjectMeta}
	}
	a, b := mk(1), mk(2)
	want := a.DeepCopy()
	want.ManagedFields = nil
	for _, o := range []*metav1.PartialObjectMetadata{a, b} {
		if _, err := lean(o); err != nil {
			t.Fatal(err)
		}
	}
	if !equality.Semantic.DeepEqual(want, a) {
		t.Errorf("lean metadata differs at %s", firstDiff("Meta", reflect.ValueOf(want), reflect.ValueOf(a)))
	}
	if &a.OwnerReferences[0] != &b.OwnerReferences[0] {
		t.Error("owner references are not shared")
	}
}

// leanRichPod is a Pod with every field the lean transform interns or
// shares, one of each optional kind, freshly allocated as a decoder would.
func leanRichPod(name string) *corev1.Pod {
	s := strings.Clone
	i64 := func(v int64) *int64 { return &v }
	i32 := func(v int32) *int32 { return &v }
	no := false
	preempt := corev1.PreemptNever
	p := leanTestPod(0, 0)
	p.Name = s(name)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: s("kubectl"), Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: s("v1"),
		FieldsType: s("FieldsV1"), FieldsV1: metav1.NewFieldsV1(s(`{"f:spec":{}}`)), Subresource: s("status"),
	}}
	sp := &p.Spec
	sp.NodeSelector = map[string]string{s("disk"): s("ssd")}
	sp.InitContainers = []corev1.Container{{Name: s("init"), Image: s("busybox"), Command: []string{s("sh")}}}
	sp.Containers[0].Ports = []corev1.ContainerPort{{Name: s("http"), ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	sp.Containers[0].Env = append(sp.Containers[0].Env,
		corev1.EnvVar{Name: s("CPU"), ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: s("app"), Resource: s("limits.cpu")}}},
		corev1.EnvVar{Name: s("MODE2"), ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s("cfg")}, Key: s("mode")}}},
		corev1.EnvVar{Name: s("TOKEN"), ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s("creds")}, Key: s("token")}}},
	)
	sp.Containers[0].VolumeMounts[0].SubPath = s("app.conf")
	sp.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: s("debug"), Image: s("busybox")}}}
	sp.Volumes = append(sp.Volumes,
		corev1.Volume{Name: s("secret"), VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s("creds")}}},
		corev1.Volume{Name: s("data"), VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s("data-0")}}},
	)
	sp.ImagePullSecrets = []corev1.LocalObjectReference{{Name: s("registry")}}
	sp.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: s("zone"), WhenUnsatisfiable: corev1.DoNotSchedule}}
	sp.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	sp.SecurityContext = &corev1.PodSecurityContext{RunAsUser: i64(1000)}
	sp.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1}}}}
	sp.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{s("10.0.0.10")}}
	sp.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
	sp.ActiveDeadlineSeconds = i64(600)
	sp.Priority = i32(100)
	sp.AutomountServiceAccountToken = &no
	sp.PreemptionPolicy = &preempt
	sp.ServiceAccountName = s("app")
	st := &p.Status
	st.QOSClass = corev1.PodQOSBurstable
	status := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: s(name), Image: s("busybox"), ImageID: s("sha256:1"),
			AllocatedResources:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: s("CrashLoopBackOff")}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: s("Error"), ExitCode: 1}},
		}
	}
	st.InitContainerStatuses = []corev1.ContainerStatus{status("init")}
	st.InitContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: s("Completed")}}
	st.EphemeralContainerStatuses = []corev1.ContainerStatus{status("debug")}
	started := true
	st.InitContainerStatuses[0].Started = &started
	// As a decoder leaves them: appended one by one, with room to spare.
	st.Conditions = nil
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.PodReadyToStartContainers} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return p
}

// TestLeanRichPod runs every field of a Pod through the lean transform in
// its three forms: each result is semantically equal to its input (but
// for managedFields), and interned and shared exactly as configured.
func TestLeanRichPod(t *testing.T) {
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	for _, tc := range []struct {
		name          string
		options       []LeanOption
		intern, share bool
		keepMF        bool
	}{
		{"default", nil, true, true, false},
		{"no interning", []LeanOption{LeanInterning(false)}, false, true, false},
		{"no sharing, managedFields kept", []LeanOption{LeanNoShare(), LeanKeepManagedFields()}, true, false, true},
		{"managedFields kept and shared, no interning", []LeanOption{nil, LeanKeepManagedFields(), LeanInterning(false)}, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lean := TransformLean(tc.options...)
			a, b := leanRichPod("a"), leanRichPod("b")
			wantA := a.DeepCopy()
			if !tc.keepMF {
				wantA.ManagedFields = nil
			}
			for _, p := range []*corev1.Pod{a, b} {
				if got, err := lean(p); err != nil || got != p {
					t.Fatalf("lean(%s) = %p, %v; want the Pod itself", p.Name, got, err)
				}
			}
			if !equality.Semantic.DeepEqual(wantA, a) {
				t.Fatalf("lean Pod differs at %s", firstDiff("Pod", reflect.ValueOf(wantA), reflect.ValueOf(a)))
			}
			// What each object keeps for itself has no spare room.
			if c := a.Status.Conditions; cap(c) != len(c) {
				t.Errorf("conditions: cap %d for %d kept", cap(c), len(c))
			}
			if got := len(a.ManagedFields) > 0; got != tc.keepMF {
				t.Errorf("managedFields kept: %v, want %v", got, tc.keepMF)
			}
			as, bs := &a.Spec, &b.Spec
			shared := map[string]bool{
				"volumes":              &as.Volumes[0] == &bs.Volumes[0],
				"init containers":      &as.InitContainers[0] == &bs.InitContainers[0],
				"ephemeral containers": &as.EphemeralContainers[0] == &bs.EphemeralContainers[0],
				"tolerations":          &as.Tolerations[0] == &bs.Tolerations[0],
				"image pull secrets":   &as.ImagePullSecrets[0] == &bs.ImagePullSecrets[0],
				"topology spread":      &as.TopologySpreadConstraints[0] == &bs.TopologySpreadConstraints[0],
				"readiness gates":      &as.ReadinessGates[0] == &bs.ReadinessGates[0],
				"security context":     as.SecurityContext == bs.SecurityContext,
				"affinity":             as.Affinity == bs.Affinity,
				"DNS config":           as.DNSConfig == bs.DNSConfig,
				"overhead":             reflect.ValueOf(as.Overhead).UnsafePointer() == reflect.ValueOf(bs.Overhead).UnsafePointer(),
				"node selector":        reflect.ValueOf(as.NodeSelector).UnsafePointer() == reflect.ValueOf(bs.NodeSelector).UnsafePointer(),
				"finalizers":           &a.Finalizers[0] == &b.Finalizers[0],
				"active deadline":      as.ActiveDeadlineSeconds == bs.ActiveDeadlineSeconds,
				"priority":             as.Priority == bs.Priority,
				"automount token":      as.AutomountServiceAccountToken == bs.AutomountServiceAccountToken,
				"preemption policy":    as.PreemptionPolicy == bs.PreemptionPolicy,
				"host IPs":             &a.Status.HostIPs[0] == &b.Status.HostIPs[0],
				"container started":    a.Status.InitContainerStatuses[0].Started == b.Status.InitContainerStatuses[0].Started,
			}
			if tc.keepMF {
				shared["managedFields' fieldsV1"] = a.ManagedFields[0].FieldsV1 == b.ManagedFields[0].FieldsV1
			}
			for what, got := range shared {
				if got != tc.share {
					t.Errorf("%s shared: %v, want %v", what, got, tc.share)
				}
			}
			ac, bc := a.Spec.Containers[0], b.Spec.Containers[0]
			ast, bst := a.Status, b.Status
			// Strings inside shared values are one copy when shared, interned
			// or not; the others are one copy only when interned.
			inShared := map[string]bool{
				"resource field ref":  same(ac.Env[2].ValueFrom.ResourceFieldRef.Resource, bc.Env[2].ValueFrom.ResourceFieldRef.Resource),
				"config map key ref":  same(ac.Env[3].ValueFrom.ConfigMapKeyRef.Key, bc.Env[3].ValueFrom.ConfigMapKeyRef.Key),
				"secret key ref":      same(ac.Env[4].ValueFrom.SecretKeyRef.Name, bc.Env[4].ValueFrom.SecretKeyRef.Name),
				"port name":           same(ac.Ports[0].Name, bc.Ports[0].Name),
				"sub path":            same(ac.VolumeMounts[0].SubPath, bc.VolumeMounts[0].SubPath),
				"secret volume":       same(a.Spec.Volumes[1].Secret.SecretName, b.Spec.Volumes[1].Secret.SecretName),
				"claim name":          same(a.Spec.Volumes[2].PersistentVolumeClaim.ClaimName, b.Spec.Volumes[2].PersistentVolumeClaim.ClaimName),
				"node selector value": same(a.Spec.NodeSelector["disk"], b.Spec.NodeSelector["disk"]),
			}
			for what, got := range inShared {
				if want := tc.intern || tc.share; got != want {
					t.Errorf("%s is one copy: %v, want %v", what, got, want)
				}
			}
			unshared := map[string]bool{
				"waiting reason":       same(ast.EphemeralContainerStatuses[0].State.Waiting.Reason, bst.EphemeralContainerStatuses[0].State.Waiting.Reason),
				"terminated reason":    same(ast.InitContainerStatuses[0].State.Terminated.Reason, bst.InitContainerStatuses[0].State.Terminated.Reason),
				"last terminated":      same(ast.EphemeralContainerStatuses[0].LastTerminationState.Terminated.Reason, bst.EphemeralContainerStatuses[0].LastTerminationState.Terminated.Reason),
				"service account name": same(a.Spec.ServiceAccountName, b.Spec.ServiceAccountName),
			}
			if tc.keepMF {
				unshared["manager"] = same(a.ManagedFields[0].Manager, b.ManagedFields[0].Manager)
			}
			for what, got := range unshared {
				if got != tc.intern {
					t.Errorf("%s interned: %v, want %v", what, got, tc.intern)
				}
			}
		})
	}
}

// TestLeanInterningSwitch checks the one interning switch: on by default,
// and the last LeanInterning wins.
func TestLeanInterningSwitch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options []LeanOption
		want    bool
	}{
		{"default", nil, true},
		{"on", []LeanOption{LeanInterning(true)}, true},
		{"off", []LeanOption{LeanInterning(false)}, false},
		{"on, then off", []LeanOption{LeanInterning(true), LeanInterning(false)}, false},
		{"off, then on", []LeanOption{LeanInterning(false), LeanInterning(true)}, true},
	} {
		a, b := leanTestPod(0, 1), leanTestPod(0, 2)
		lean := TransformLean(tc.options...)
		for _, p := range []*corev1.Pod{a, b} {
			if _, err := lean(p); err != nil {
				t.Fatal(err)
			}
		}
		// Node names are never shared, only interned.
		if got := unsafe.StringData(a.Spec.NodeName) == unsafe.StringData(leanTestPod(0, 4).Spec.NodeName); got {
			t.Fatalf("%s: a fresh Pod shares its node name: the test proves nothing", tc.name)
		}
		c := leanTestPod(0, 4)
		if _, err := lean(c); err != nil {
			t.Fatal(err)
		}
		if got := unsafe.StringData(a.Spec.NodeName) == unsafe.StringData(c.Spec.NodeName); got != tc.want {
			t.Errorf("%s: node names interned: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// accessorOnly is an object whose metadata is not a *metav1.ObjectMeta: the
// lean transform can only strip and drop through its accessors.
type accessorOnly struct{ u *unstructured.Unstructured }

func (a accessorOnly) GetObjectMeta() metav1.Object { return a.u }

// TestLeanObjectForms covers the forms of object a transform may meet
// besides typed ones: tombstones, Unstructured, an object known only
// through its accessors, and a non-object.
func TestLeanObjectForms(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply}}
	unstr := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}}
		u.SetManagedFields(mf)
		u.SetAnnotations(map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "keep": "me"})
		return u
	}
	lean, keep := TransformLean(LeanDropLastApplied()), TransformLean(LeanKeepManagedFields())

	tomb := cache.DeletedFinalStateUnknown{Key: "ns-0/app-0-1", Obj: leanTestPod(0, 1)}
	got, err := lean(tomb)
	gt, ok := got.(cache.DeletedFinalStateUnknown)
	if err != nil || !ok || gt.Key != tomb.Key || gt.Obj.(*corev1.Pod).ManagedFields != nil {
		t.Errorf("tombstone: got %#v, %v; want the same key and its Pod lean", got, err)
	}

	u := unstr()
	if _, err := keep(u); err != nil || len(u.GetManagedFields()) != 1 || len(u.GetAnnotations()) != 2 {
		t.Errorf("Unstructured with LeanKeepManagedFields: managedFields %v, annotations %v (%v); want both kept", u.GetManagedFields(), u.GetAnnotations(), err)
	}
	if _, err := lean(u); err != nil || u.GetManagedFields() != nil || len(u.GetAnnotations()) != 1 {
		t.Errorf("Unstructured with LeanDropLastApplied: managedFields %v, annotations %v (%v); want none and keep only", u.GetManagedFields(), u.GetAnnotations(), err)
	}

	for _, tc := range []struct {
		name       string
		lean       cache.TransformFunc
		mf, annots int
	}{
		{"default", TransformLean(), 0, 2},
		{"LeanKeepManagedFields", keep, 1, 2},
		{"LeanDropLastApplied", lean, 0, 1},
	} {
		inner := unstr()
		before := inner.GetAnnotations()
		obj := accessorOnly{inner}
		if got, err := tc.lean(obj); err != nil || got != obj {
			t.Fatalf("%s: accessor-only object: got %v, %v; want it back", tc.name, got, err)
		}
		if len(inner.GetManagedFields()) != tc.mf || len(inner.GetAnnotations()) != tc.annots {
			t.Errorf("%s: accessor-only object: managedFields %v, annotations %v; want %d and %d", tc.name, inner.GetManagedFields(), inner.GetAnnotations(), tc.mf, tc.annots)
		}
		if len(before) != 2 {
			t.Errorf("%s: the annotations read before were edited in place: %v", tc.name, before)
		}
	}

	if got, err := lean("not an object"); err != nil || got != "not an object" {
		t.Errorf("a non-object: got %v, %v; want it unchanged", got, err)
	}
}
