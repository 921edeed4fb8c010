package ecnudp

// FreeBSD's udp_output takes the per-packet IP_TOS override as one byte
// and refuses any other length.
const sendTOSLen = 1
