package hub

import (
	"path/filepath"
	"testing"
)

func TestOptionsFromEnv(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name         string
		env          map[string]string
		wantCache    string
		wantEndpoint string
		wantOffline  bool
		wantToken    string
	}{
		{name: "nothing set", env: map[string]string{},
			wantCache: filepath.Join(home, ".cache", "huggingface", "hub")},
		{name: "XDG_CACHE_HOME", env: map[string]string{"XDG_CACHE_HOME": "/xdg"},
			wantCache: "/xdg/huggingface/hub"},
		{name: "HF_HOME beats XDG", env: map[string]string{"HF_HOME": "/hf", "XDG_CACHE_HOME": "/xdg"},
			wantCache: "/hf/hub"},
		{name: "HF_HUB_CACHE beats HF_HOME", env: map[string]string{"HF_HUB_CACHE": "/cache", "HF_HOME": "/hf"},
			wantCache: "/cache"},
		{name: "HF_HOME with tilde", env: map[string]string{"HF_HOME": "~/hf"},
			wantCache: filepath.Join(home, "hf", "hub")},
		{name: "endpoint, token, offline", env: map[string]string{"HF_ENDPOINT": "https://mirror.example/", "HF_TOKEN": "hf_x", "HF_HUB_OFFLINE": "1"},
			wantCache: filepath.Join(home, ".cache", "huggingface", "hub"), wantEndpoint: "https://mirror.example",
			wantToken: "hf_x", wantOffline: true},
		{name: "offline spelled true", env: map[string]string{"HF_HUB_OFFLINE": "True"},
			wantCache: filepath.Join(home, ".cache", "huggingface", "hub"), wantOffline: true},
		{name: "offline 0 is online", env: map[string]string{"HF_HUB_OFFLINE": "0"},
			wantCache: filepath.Join(home, ".cache", "huggingface", "hub")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearHFEnv(t)
			t.Setenv("HOME", home)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o := OptionsFromEnv()
			if o.CacheDir != tc.wantCache || o.Endpoint != tc.wantEndpoint || o.Offline != tc.wantOffline ||
				o.Token != tc.wantToken || o.Revision != DefaultRevision || o.Progress == nil {
				t.Errorf("OptionsFromEnv() = %+v, want cache %s endpoint %q offline %v token %q",
					o, tc.wantCache, tc.wantEndpoint, tc.wantOffline, tc.wantToken)
			}
			d := o.withDefaults()
			if want := tc.wantEndpoint; want == "" && d.Endpoint != DefaultEndpoint || want != "" && d.Endpoint != want {
				t.Errorf("endpoint after defaults = %q", d.Endpoint)
			}
		})
	}
}
