// Package imagetest checks pi2hop in containers end to end: a dockerd of
// the tests' own (own data root, no firewall rules, no bridge) builds the
// image once with make image; the tests run it alone, as the compose lab
// of deploy/compose and as a lab inside a container, and check the other
// files of deploy/ statically. The dockerd is stopped after the last test.
package imagetest
