package clidoc

import (
	"strconv"

	"github.com/spf13/pflag"
)

// Alias declares old as a hidden, deprecated spelling of the flag new
// (already declared on fs): it sets the same value, help does not show
// it, and using it prints a note naming the new spelling. Old spellings
// stay one release so scripts keep working while they move.
func Alias(fs *pflag.FlagSet, old, new string) {
	f := fs.Lookup(new)
	if f == nil {
		panic("clidoc: alias of undeclared flag --" + new)
	}
	fs.Var(f.Value, old, f.Usage)
	fs.Lookup(old).NoOptDefVal = f.NoOptDefVal // a bool alias needs no value either
	if err := fs.MarkDeprecated(old, "use --"+new); err != nil {
		panic(err)
	}
}

// JSONFlag declares --json, machine output, alike on every command:
// BoolFunc, so help shows "--json" rather than "--json[=true|false]".
func JSONFlag(fs *pflag.FlagSet, p *bool, usage string) {
	fs.BoolFunc("json", usage, func(v string) (err error) {
		*p, err = strconv.ParseBool(v)
		return err
	})
}
