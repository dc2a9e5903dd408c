package indexer

import "syscall"

const sysSyncfs = syscall.SYS_SYNCFS
