package indexer

import "testing"

func TestKernelAtLeast(t *testing.T) {
	for _, c := range []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v595", true},
		{"5.8.0", true},
		{"5.8", true},
		{"5.10.102.1-microsoft-standard-WSL2", true},
		{"5.7.19", false},
		{"4.19.0-21-amd64", false},
		{"5.4.0-150-generic", false},
		{"3.10.0-1160.el7.x86_64", false},
		{"10.0", true},
		{"5.8-rc1", true},
		{"5.7-rc1", false},
		{"", false},
		{"linux", false},
		{"5", false},
		{"5.x", false},
	} {
		if got := kernelAtLeast(c.release, 5, 8); got != c.want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", c.release, got, c.want)
		}
	}
}
