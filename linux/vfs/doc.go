// Package vfs is the Linux personality's file system: the tree of nodes
// and its path lookup, the open files of every kind behind one File
// interface (regular files, directories, devices, the console, pipes),
// the descriptor table, the wait queues blocked threads and pollers
// register on, and the budget the tree and pipes charge what they hold
// to. It knows no kernel and no current thread: a caller that would block
// gets ErrWouldBlock and waits on the file's Queue itself.
//
// A new kind of file is one file here implementing File (its readiness
// and queue included) and its line in the saved state (file_persist.go).
package vfs
