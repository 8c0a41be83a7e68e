// Package fdpass passes file descriptors beside a byte stream on a Unix
// connection (SCM_RIGHTS), for a party's application API: the party hands
// a same-host application a slab's keys as a sealed memfd instead of as
// bytes, on the application's own gRPC connection.
//
// The server side (Server) queues fds with Send; each goes with the next
// bytes the connection writes, so it reaches the peer no later than the
// message written after Send. The client side (Client) reads with
// recvmsg and keeps every fd received in an Inbox, named by its file's
// device and inode numbers (ID), for the message that names it to take.
// An fd nobody takes is closed when the Inbox fills or closes.
package fdpass
