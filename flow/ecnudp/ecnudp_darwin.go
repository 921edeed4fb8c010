package ecnudp

// macOS takes the per-packet IP_TOS override as an int, as Linux does.
const sendTOSLen = 4
