package indexer

const sysSyncfs = 306 // syncfs(2); not in package syscall for amd64
