// Package check answers whether a path is L4S-ready and whether this box
// works as a bottleneck.
//
// The path check runs between a client (Path) and a responder (Serve) on
// the far end, over UDP. The client sends trains of probes in each ECN
// codepoint; the responder counts what each arrived as, and answers each
// probe with an echo sent in a codepoint the probe asks for, so one
// exchange measures both directions and the responder never sends more
// than it receives (it cannot be used to amplify traffic towards a forged
// source). Judge turns what arrived into a verdict from the valid
// transitions of the ECN field along a path: Not-ECT stays Not-ECT, ECT(0)
// and ECT(1) stay or become CE, CE stays CE; anything else is a fault.
package check
