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
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/schemetype"
)

// The memory estimate's accuracy: for each form an informer caches, one
// child process fills an informer with accuracyPods Pods and compares the
// estimate (Factory.MemoryStatus) with the live heap after GC after the
// sync minus the same before the start. The Pods come from this (the
// parent) process, generated page by page as they are listed, so that the
// child's heap holds nothing but what its informer retains.

const (
	envAccuracyForm = "KUBEINFORMERS_MEMSIZE_FORM"
	envAccuracyURL  = "KUBEINFORMERS_MEMSIZE_URL"
	envAccuracyN    = "KUBEINFORMERS_MEMSIZE_N"
	accuracyPods    = 30000
	accuracyBound   = 0.15
)

var accuracyForms = []string{"typed", "lean", "keepfields", "metadata", "unstructured", "schemetype"}

func TestMemoryEstimateAccuracy(t *testing.T) {
	if form := os.Getenv(envAccuracyForm); form != "" {
		accuracyChild(t, form)
		return
	}
	if testing.Short() {
		t.Skip("fills one informer of 30,000 Pods per form, each in its own process")
	}
	n := accuracyPods
	if raceDetector {
		// 30,000 Pods in six processes under the race detector take
		// minutes; go test without -race checks 30,000.
		n = 5000
	}
	if s := os.Getenv(envAccuracyN); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s=%q: %v", envAccuracyN, s, err)
		}
	}
	srv := httptest.NewServer(podServer{n: n})
	defer srv.Close()
	for _, form := range accuracyForms {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryEstimateAccuracy$", "-test.v")
		cmd.Env = append(os.Environ(), envAccuracyForm+"="+form, envAccuracyURL+"="+srv.URL, fmt.Sprintf("%s=%d", envAccuracyN, n))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("form %s: %v\n%s", form, err, out)
		}
		var est, measured, objects float64
		found := false
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if _, err := fmt.Sscanf(strings.TrimSpace(sc.Text()), "memsize-result objects=%g estimate=%g measured=%g", &objects, &est, &measured); err == nil {
				found = true
			}
		}
		if !found {
			t.Fatalf("form %s: no result in the child's output:\n%s", form, out)
		}
		ratio := est / measured
		t.Logf("form %-12s objects=%.0f estimate=%6.1f MiB measured=%6.1f MiB ratio=%.3f per-object est=%.0f B measured=%.0f B",
			form, objects, est/(1<<20), measured/(1<<20), ratio, est/objects, measured/objects)
		if objects != float64(n) {
			t.Errorf("form %s: %v objects cached, want %d", form, objects, n)
		}
		if ratio < 1-accuracyBound || ratio > 1+accuracyBound {
			t.Errorf("form %s: estimate/measured = %.3f, want within ±%.0f%%", form, ratio, accuracyBound*100)
		}
	}
}

// liveHeap is the heap live after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func accuracyChild(t *testing.T, form string) {
	n, err := strconv.Atoi(os.Getenv(envAccuracyN))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: os.Getenv(envAccuracyURL), QPS: -1}
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	options := []informers.SharedInformerOption{informers.WithListMode(informers.ListModeConsistentList)}
	switch form {
	case "lean":
		options = append(options, informers.WithLeanMemory())
	case "keepfields":
		options = append(options, informers.WithResourceOptions(pods, informers.ResourceOptions{
			KeepFields: []string{"metadata.labels", "metadata.ownerReferences", "spec.nodeName", "spec.containers", "status.phase", "status.podIP", "status.conditions"},
		}))
	case "unstructured":
		options = append(options, informers.WithDynamicBuiltIns())
	}
	factory, err := informers.NewForConfig(cfg, 0, options...)
	if err != nil {
		t.Fatal(err)
	}
	var inf cache.SharedIndexInformer
	switch form {
	case "typed", "lean", "keepfields":
		inf = factory.Core().V1().Pods().Informer()
	case "unstructured":
		g, err := factory.ForResource(pods)
		if err != nil {
			t.Fatal(err)
		}
		inf = g.Informer()
	case "metadata":
		g, err := factory.ForMetadata(pods)
		if err != nil {
			t.Fatal(err)
		}
		inf = g.Informer()
	case "schemetype":
		gvk := exampleGV.WithKind("Pod")
		r, err := schemetype.Resource(cfg, nil, exampleScheme(), gvk, exampleGV.WithResource("pods"), true)
		if err != nil {
			t.Fatal(err)
		}
		host := factory.(binding.Host)
		if r, err = host.BindResource(r, nil); err != nil {
			t.Fatal(err)
		}
		inf, _ = host.ResolveBound(r)
	default:
		t.Fatalf("unknown form %q", form)
	}
	before := liveHeap()
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	after := liveHeap()
	var status informers.MemoryStatus
	for _, s := range factory.MemoryStatus() {
		status = s
	}
	if status.Objects != n {
		t.Errorf("%d objects, want %d", status.Objects, n)
	}
	fmt.Printf("memsize-result objects=%d estimate=%d measured=%d\n", status.Objects, status.Bytes, int64(after)-int64(before))
	runtime.KeepAlive(inf)
}

var exampleGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

// exampleScheme registers the Pod's Go types under example.com/v1: a type
// of the scheme alone, which crcache binds through internal/schemetype.
func exampleScheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	s.AddKnownTypes(exampleGV, &corev1.Pod{}, &corev1.PodList{})
	metav1.AddToGroupVersion(s, exampleGV)
	return s
}

// podServer serves n generated Pods at /api/v1/pods (and, for the scheme
// type, /apis/example.com/v1/pods), in pages, as JSON; as metadata when
// the client asks for PartialObjectMetadataList. A watch stays open
// without events until the client leaves.
type podServer struct{ n int }

func (s podServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		if q.Get("sendInitialEvents") == "true" {
			http.Error(w, "no watch-list here", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	apiVersion := "v1"
	if strings.HasPrefix(r.URL.Path, "/apis/example.com/v1/") {
		apiVersion = "example.com/v1"
	} else if r.URL.Path != "/api/v1/pods" {
		http.NotFound(w, r)
		return
	}
	from, _ := strconv.Atoi(q.Get("continue"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || from+limit > s.n {
		limit = s.n - from
	}
	meta := strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList")
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	listMeta := metav1.ListMeta{ResourceVersion: "1000"}
	if from+limit < s.n {
		listMeta.Continue = strconv.Itoa(from + limit)
	}
	if meta {
		list := metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, ListMeta: listMeta}
		for i := from; i < from+limit; i++ {
			p := generatedPod(i)
			list.Items = append(list.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: p.ObjectMeta})
		}
		_ = enc.Encode(list)
		return
	}
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: "PodList"}, ListMeta: listMeta}
	for i := from; i < from+limit; i++ {
		p := generatedPod(i)
		p.APIVersion, p.Kind = apiVersion, "Pod"
		list.Items = append(list.Items, p)
	}
	_ = enc.Encode(list)
}

// generatedPod is Pod i of a cluster of ReplicaSets of 10 Pods each,
// over 10 namespaces and 100 nodes: two containers, a volume, a status
// of a running Pod and the managedFields of its controller and kubelet.
func generatedPod(i int) corev1.Pod {
	rs := i / 10
	app := fmt.Sprintf("app-%04d", rs)
	hash := fmt.Sprintf("%010x", uint64(rs)*2654435761%(1<<40))
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second))
	running := metav1.NewTime(created.Add(3 * time.Second))
	image := fmt.Sprintf("registry.example.com/team-%d/%s:1.%d.0", rs%7, app, rs%5)
	name := fmt.Sprintf("%s-%s-%05x", app, hash, i)
	ip := fmt.Sprintf("10.%d.%d.%d", 64+i/65536, i/256%256, i%256)
	env := []corev1.EnvVar{
		{Name: "LOG_LEVEL", Value: "info"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
	}
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	cond := func(typ corev1.PodConditionType, d time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(created.Add(d))}
	}
	status := func(c, img string) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name: c, Image: img, ImageID: img + "@sha256:" + strings.Repeat(hash[:8], 8),
			ContainerID: fmt.Sprintf("containerd://%064x", uint64(i)*7919+uint64(len(c))),
			Ready:       true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: running}},
		}
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: fmt.Sprintf("team-%d", rs%10), GenerateName: app + "-" + hash + "-",
			UID:               types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)),
			ResourceVersion:   strconv.Itoa(1000 + i),
			CreationTimestamp: created,
			Labels: map[string]string{
				"app.kubernetes.io/name": app, "app.kubernetes.io/component": "web",
				"app.kubernetes.io/part-of": fmt.Sprintf("team-%d", rs%7), "pod-template-hash": hash,
			},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "checksum/config": strings.Repeat(hash, 6)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash,
				UID: types.UID(fmt.Sprintf("%08x-1111-4000-8000-%012x", rs, rs)), Controller: new(true), BlockOwnerDeletion: new(true),
			}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(specFields)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &running, FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(statusFields), Subresource: "status"},
			},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("node-%03d", i*7%100), ServiceAccountName: "default", RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{
				{Name: "app", Image: image, Env: env, Resources: corev1.ResourceRequirements{Requests: req, Limits: req},
					Ports:                  []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					VolumeMounts:           []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true}},
					TerminationMessagePath: "/dev/termination-log", ImagePullPolicy: corev1.PullIfNotPresent},
				{Name: "proxy", Image: "registry.example.com/mesh/proxy:1.24.0", Args: []string{"proxy", "sidecar", "--log-level=warn"},
					Resources:              corev1.ResourceRequirements{Requests: req},
					TerminationMessagePath: "/dev/termination-log", ImagePullPolicy: corev1.PullIfNotPresent},
			},
			Volumes:     []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: fmt.Sprintf("10.0.0.%d", i*7%100+1), PodIP: ip,
			PodIPs:            []corev1.PodIP{{IP: ip}},
			StartTime:         &created,
			Conditions:        []corev1.PodCondition{cond(corev1.PodInitialized, time.Second), cond(corev1.PodReady, 5*time.Second), cond(corev1.ContainersReady, 5*time.Second), cond(corev1.PodScheduled, 0)},
			ContainerStatuses: []corev1.ContainerStatus{status("app", image), status("proxy", "registry.example.com/mesh/proxy:1.24.0")},
			QOSClass:          corev1.PodQOSBurstable,
		},
	}
}

const specFields = `{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app.kubernetes.io/component":{},"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"LOG_LEVEL\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"POD_NAME\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:fieldRef":{}}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:volumeMounts":{".":{},"k:{\"mountPath\":\"/etc/app\"}":{".":{},"f:mountPath":{},"f:name":{},"f:readOnly":{}}}},"k:{\"name\":\"proxy\"}":{".":{},"f:args":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{}}},"f:restartPolicy":{},"f:serviceAccountName":{},"f:volumes":{".":{},"k:{\"name\":\"config\"}":{".":{},"f:configMap":{".":{},"f:name":{}},"f:name":{}}}}}`

const statusFields = `{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.64.0.1\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`
