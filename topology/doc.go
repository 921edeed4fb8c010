// Package topology places a hop in the box's network: Pair, two
// namespaces each routing into its own TUN device (the lab and `pi2hop
// shell`), and Gateway, policy routing between two interfaces of this box
// (`pi2hop run`). It opens the devices (package tun), makes the
// namespaces, addresses, routes, rules and sysctls around them through a
// journal (package netsys) and starts the hop (package hop) between the
// devices; Close stops the hop and undoes the journal.
//
// It sits above hop so that hop knows nothing of namespaces or routes:
// a hop forwards between any two devices it is given.
package topology
