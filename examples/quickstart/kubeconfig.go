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

package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/clientcmd/api/latest"
)

// loadKubeconfig builds a client configuration from kubeconfig files the
// way kubectl does for the common cases: explicit, or else the files listed
// in $KUBECONFIG merged (the first file to define a cluster, user or
// context wins), relative paths resolved against their file, the current
// context's cluster and user, certificates, tokens, basic auth,
// impersonation, proxy and exec credential plugins.
//
// In your own program, use k8s.io/client-go/tools/clientcmd instead:
//
//	rules := clientcmd.NewDefaultClientConfigLoadingRules()
//	rules.ExplicitPath = explicit
//	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
//
// This example does not, only because package clientcmd brings
// github.com/spf13/pflag into the go.mod of the module it is built in, and
// the quickstart lives in the library's own module, which keeps its
// requirements to k8s.io.
func loadKubeconfig(explicit string) (*rest.Config, string, error) {
	paths := []string{explicit}
	if explicit == "" {
		paths = filepath.SplitList(os.Getenv("KUBECONFIG"))
	}
	merged := clientcmdapi.NewConfig()
	for _, path := range paths {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && explicit == "" {
			continue // kubectl skips missing files in $KUBECONFIG too
		}
		if err != nil {
			return nil, "", err
		}
		obj, err := runtime.Decode(latest.Codec, data)
		if err != nil {
			return nil, "", fmt.Errorf("decoding %s: %w", path, err)
		}
		cfg, ok := obj.(*clientcmdapi.Config)
		if !ok {
			return nil, "", fmt.Errorf("%s holds a %T, not a kubeconfig", path, obj)
		}
		base, err := filepath.Abs(filepath.Dir(path))
		if err != nil {
			return nil, "", err
		}
		for name, cluster := range cfg.Clusters {
			resolve(base, &cluster.CertificateAuthority)
			if _, ok := merged.Clusters[name]; !ok {
				merged.Clusters[name] = cluster
			}
		}
		for name, user := range cfg.AuthInfos {
			resolve(base, &user.ClientCertificate, &user.ClientKey, &user.TokenFile)
			if user.Exec != nil && strings.ContainsRune(user.Exec.Command, filepath.Separator) {
				resolve(base, &user.Exec.Command)
			}
			if _, ok := merged.AuthInfos[name]; !ok {
				merged.AuthInfos[name] = user
			}
		}
		for name, context := range cfg.Contexts {
			if _, ok := merged.Contexts[name]; !ok {
				merged.Contexts[name] = context
			}
		}
		if merged.CurrentContext == "" {
			merged.CurrentContext = cfg.CurrentContext
		}
	}

	name := merged.CurrentContext
	context, ok := merged.Contexts[name]
	switch {
	case name == "":
		return nil, "", fmt.Errorf("no current context in %s", strings.Join(paths, ", "))
	case !ok:
		return nil, "", fmt.Errorf("context %q not found", name)
	}
	cluster, ok := merged.Clusters[context.Cluster]
	if !ok || cluster.Server == "" {
		return nil, "", fmt.Errorf("context %q: cluster %q has no server", name, context.Cluster)
	}
	user, ok := merged.AuthInfos[context.AuthInfo]
	if !ok {
		user = clientcmdapi.NewAuthInfo() // anonymous
	}

	config := &rest.Config{
		Host:               cluster.Server,
		DisableCompression: cluster.DisableCompression,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cluster.InsecureSkipTLSVerify,
			ServerName: cluster.TLSServerName,
			CAFile:     cluster.CertificateAuthority,
			CAData:     cluster.CertificateAuthorityData,
			CertFile:   user.ClientCertificate,
			CertData:   user.ClientCertificateData,
			KeyFile:    user.ClientKey,
			KeyData:    user.ClientKeyData,
		},
		BearerToken:     user.Token,
		BearerTokenFile: user.TokenFile,
		Username:        user.Username,
		Password:        user.Password,
		Impersonate: rest.ImpersonationConfig{
			UserName: user.Impersonate,
			UID:      user.ImpersonateUID,
			Groups:   user.ImpersonateGroups,
			Extra:    user.ImpersonateUserExtra,
		},
		AuthProvider: user.AuthProvider,
		ExecProvider: user.Exec,
	}
	if user.Exec != nil {
		// Per-cluster configuration for the plugin, as clientcmd passes it.
		config.ExecProvider.Config = cluster.Extensions["client.authentication.k8s.io/exec"]
	}
	if cluster.ProxyURL != "" {
		u, err := url.Parse(cluster.ProxyURL)
		if err != nil {
			return nil, "", fmt.Errorf("cluster %q: proxy-url: %w", context.Cluster, err)
		}
		config.Proxy = http.ProxyURL(u)
	}
	return config, name, nil
}

// resolve makes relative paths absolute against base.
func resolve(base string, paths ...*string) {
	for _, p := range paths {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
}
