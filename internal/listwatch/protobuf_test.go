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

package listwatch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// Protobuf needs a generated typed client with a REST client: a fake
// client's calls are kept as they are.
func TestProtobufNeedsRESTClient(t *testing.T) {
	if _, ok := Of(fake.NewClientset().CoreV1().Pods("ns")).Protobuf("pods"); ok {
		t.Error("a fake client's calls were replaced")
	}
	if _, ok := (Requests{}).Protobuf("pods"); ok {
		t.Error("calls without a client were replaced")
	}
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"})
	r, ok := Of(client.CoreV1().Pods("ns")).Protobuf("pods")
	if !ok || r.List == nil || r.Watch == nil {
		t.Fatal("a generated client's calls were not replaced")
	}
	if l := newList[*corev1.PodList](); l.(*corev1.PodList) == nil {
		t.Error("newList made no list")
	}
}

// nilREST is a typed client whose REST client is a nil pointer, as a
// hand-built clientset might hold.
type nilREST struct{ Client[*corev1.PodList] }

func (nilREST) GetClient() rest.Interface { return (*rest.RESTClient)(nil) }
func (nilREST) GetNamespace() string      { return "" }

// A REST client that is a nil pointer keeps the client's own calls; a
// failed protobuf request returns its error, and no object.
func TestProtobufEdges(t *testing.T) {
	if _, ok := Of[*corev1.PodList](nilREST{}).Protobuf("pods"); ok {
		t.Error("calls through a nil REST client were replaced")
	}
	var accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		http.Error(w, "no pods here", http.StatusForbidden)
	}))
	defer srv.Close()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	r, ok := Of(client.CoreV1().Pods("ns")).Protobuf("pods")
	if !ok {
		t.Fatal("a generated client's calls were not replaced")
	}
	timeout := int64(5)
	list, err := r.List(context.Background(), metav1.ListOptions{TimeoutSeconds: &timeout})
	if !apierrors.IsForbidden(err) || list != nil {
		t.Errorf("List: %v, %v; want the server's error and no list", list, err)
	}
	if accept != AcceptProtobuf {
		t.Errorf("asked for %q, want %q", accept, AcceptProtobuf)
	}
}

// TestProtobufConfig: a config without content types gets protobuf with
// a JSON fallback, on a copy; one that sets either is kept as it is.
func TestProtobufConfig(t *testing.T) {
	bare := &rest.Config{Host: "https://x"}
	got := ProtobufConfig(bare)
	if got == bare || got.ContentType != ContentTypeProtobuf || got.AcceptContentTypes != AcceptProtobuf || got.Host != bare.Host {
		t.Errorf("ProtobufConfig(bare) = %+v", got)
	}
	if bare.ContentType != "" || bare.AcceptContentTypes != "" {
		t.Error("ProtobufConfig changed its argument")
	}
	for _, c := range []*rest.Config{{ContentConfig: rest.ContentConfig{ContentType: "application/json"}}, {ContentConfig: rest.ContentConfig{AcceptContentTypes: "application/json"}}} {
		if got := ProtobufConfig(c); got != c {
			t.Errorf("ProtobufConfig(%+v) = a new config", c.ContentConfig)
		}
	}
}
