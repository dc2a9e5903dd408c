//go:build !(linux && (amd64 || arm64))

package indexer

import "errors"

// haveSyncfs: without syncfs(2) a batch syncs each file and directory.
const haveSyncfs = false

func syncfsDir(string) error { return errors.ErrUnsupported }
