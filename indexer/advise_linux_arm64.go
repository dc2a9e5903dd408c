package indexer

// sysPreadv2 is preadv2's number (the syscall package predates it).
const sysPreadv2 = 286
