package clidoc

import (
	"fmt"
	"io"
	"strings"
)

// The completion scripts share one model: the words typed so far, less
// flags, name a path ("", "flow", "help flow"); the walk goes on past a
// path that is a group (its next word is a subcommand) and stops at a
// leaf. Each path offers its next words, its flags, the values of its
// flags that are one of a list, and files where a leaf takes arguments.
// A group's flags never take values, so a flag's value is never
// mistaken for a subcommand.

// state is what may follow the words of one path.
type state struct {
	path  string
	next  []item // subcommands or, after help, command names
	flags []Flag
	files bool // its arguments may be files
}

type item struct{ name, short string }

func items(cs []*Command) []item {
	out := make([]item, len(cs))
	for i, c := range cs {
		out[i] = item{c.Name, c.Short}
	}
	return out
}

// states lists every path the completion knows, root first, and which of
// them are groups the walk continues past.
func (p *Program) states() (all []state, groups []string) {
	all = append(all, state{path: "", next: items(p.Commands)})
	groups = append(groups, "")
	p.walk(func(c *Command) {
		st := state{path: c.Path, next: items(c.Subs), flags: c.Flags, files: c.ArgFiles}
		for _, w := range c.ArgWords {
			st.next = append(st.next, item{w, c.Name + " " + w})
		}
		all = append(all, st)
		if len(c.Subs) > 0 {
			groups = append(groups, c.Path)
		}
	})
	p.walk(func(h *Command) {
		if !h.ArgsAreCommands {
			return
		}
		all[indexOf(all, h.Path)].next = items(p.Commands)
		groups = append(groups, h.Path)
		p.walk(func(g *Command) {
			if len(g.Subs) > 0 {
				all = append(all, state{path: h.Path + " " + g.Path, next: items(g.Subs)})
				groups = append(groups, h.Path+" "+g.Path)
			}
		})
	})
	return all, groups
}

func indexOf(all []state, path string) int {
	for i, s := range all {
		if s.path == path {
			return i
		}
	}
	panic("clidoc: no state " + path)
}

func names(it []item) string {
	s := make([]string, len(it))
	for i, x := range it {
		s[i] = x.name
	}
	return strings.Join(s, " ")
}

func flagWords(fs []Flag) string {
	var s []string
	for _, f := range fs {
		s = append(s, "--"+f.Name)
		if f.Shorthand != "" {
			s = append(s, "-"+f.Shorthand)
		}
	}
	return strings.Join(s, " ")
}

// flagSpellings are the words that name f on a command line.
func flagSpellings(f Flag) []string {
	if f.Shorthand != "" {
		return []string{"--" + f.Name, "-" + f.Shorthand}
	}
	return []string{"--" + f.Name}
}

// shQuote quotes s for bash and zsh: single quotes, each inner one
// closed, escaped and reopened.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = shQuote(s)
	}
	return strings.Join(q, "|")
}

// Bash writes a bash completion script: a function _NAME that reads
// COMP_WORDS and COMP_CWORD and fills COMPREPLY, bound with complete -F.
func Bash(w io.Writer, p *Program) error {
	all, groups := p.states()
	fn := "_" + strings.ReplaceAll(p.Name, "-", "_")
	b := new(strings.Builder)
	fmt.Fprintf(b, "# bash completion for %[1]s.\n# Load it with: source <(%[1]s completion bash)\n# or for every shell: %[1]s completion bash > /etc/bash_completion.d/%[1]s\n\n", p.Name)
	fmt.Fprintf(b, "%s() {\n", fn)
	fmt.Fprintf(b, "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n")
	fmt.Fprintf(b, "\tlocal path= w i next= flags= files=\n")
	fmt.Fprintf(b, "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n\t\tw=${COMP_WORDS[i]}\n\t\t[[ $w == -* ]] && continue\n")
	fmt.Fprintf(b, "\t\tcase $path in\n\t\t%s) path=${path:+$path }$w ;;\n\t\t*) break ;;\n\t\tesac\n\tdone\n", quoteAll(groups))
	fmt.Fprintf(b, "\tcase $path in\n")
	for _, s := range all {
		fmt.Fprintf(b, "\t%s) next=%s flags=%s", shQuote(s.path), shQuote(names(s.next)), shQuote(flagWords(s.flags)))
		if s.files {
			fmt.Fprintf(b, " files=1")
		}
		fmt.Fprintf(b, " ;;\n")
	}
	fmt.Fprintf(b, "\tesac\n")
	// The value after a flag: one of its choices, or anything (files).
	var valued []string
	fmt.Fprintf(b, "\tcase \"$path $prev\" in\n")
	for _, s := range all {
		for _, f := range s.flags {
			if f.Arg == "" {
				continue
			}
			var pats []string
			for _, sp := range flagSpellings(f) {
				pats = append(pats, s.path+" "+sp)
			}
			if len(f.Choices) > 0 {
				fmt.Fprintf(b, "\t%s) COMPREPLY=($(compgen -W %s -- \"$cur\")); return ;;\n", quoteAll(pats), shQuote(strings.Join(f.Choices, " ")))
			} else {
				valued = append(valued, pats...)
			}
		}
	}
	if len(valued) > 0 {
		fmt.Fprintf(b, "\t%s) compopt -o default; COMPREPLY=(); return ;;\n", quoteAll(valued))
	}
	fmt.Fprintf(b, "\tesac\n")
	fmt.Fprintf(b, "\tif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n")
	fmt.Fprintf(b, "\telif [[ -n $files ]]; then\n\t\tcompopt -o default\n\t\tCOMPREPLY=()\n")
	fmt.Fprintf(b, "\telse\n\t\tCOMPREPLY=($(compgen -W \"$next\" -- \"$cur\"))\n\tfi\n}\n\n")
	fmt.Fprintf(b, "complete -F %s %s\n", fn, p.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

// Zsh writes a zsh completion function: sourced, it registers itself
// with compdef; saved as _NAME in a directory of $fpath, compinit
// autoloads it.
func Zsh(w io.Writer, p *Program) error {
	all, groups := p.states()
	fn := "_" + strings.ReplaceAll(p.Name, "-", "_")
	b := new(strings.Builder)
	fmt.Fprintf(b, "#compdef %[1]s\n# zsh completion for %[1]s.\n# Load it with: source <(%[1]s completion zsh)\n# or save it as %[2]s in a directory of $fpath.\n\n", p.Name, fn)
	fmt.Fprintf(b, "%s() {\n", fn)
	fmt.Fprintf(b, "\tlocal p= w i prev=${words[CURRENT-1]}\n\tlocal -a next flags\n\tlocal files=\n")
	fmt.Fprintf(b, "\tfor ((i = 2; i < CURRENT; i++)); do\n\t\tw=${words[i]}\n\t\t[[ $w == -* ]] && continue\n")
	fmt.Fprintf(b, "\t\tcase $p in\n\t\t(%s) p=${p:+$p }$w ;;\n\t\t(*) break ;;\n\t\tesac\n\tdone\n", quoteAll(groups))
	fmt.Fprintf(b, "\tcase $p in\n")
	for _, s := range all {
		fmt.Fprintf(b, "\t(%s)\n", shQuote(s.path))
		var nx, fl []string
		for _, it := range s.next {
			nx = append(nx, shQuote(it.name+":"+brief(it.short, 60)))
		}
		for _, f := range s.flags {
			for _, sp := range flagSpellings(f) {
				fl = append(fl, shQuote(sp+":"+brief(f.Usage, 60)))
			}
		}
		fmt.Fprintf(b, "\t\tnext=(%s)\n\t\tflags=(%s)\n", strings.Join(nx, " "), strings.Join(fl, " "))
		if s.files {
			fmt.Fprintf(b, "\t\tfiles=1\n")
		}
		fmt.Fprintf(b, "\t\t;;\n")
	}
	fmt.Fprintf(b, "\tesac\n")
	var valued []string
	fmt.Fprintf(b, "\tcase \"$p $prev\" in\n")
	for _, s := range all {
		for _, f := range s.flags {
			if f.Arg == "" {
				continue
			}
			var pats []string
			for _, sp := range flagSpellings(f) {
				pats = append(pats, s.path+" "+sp)
			}
			if len(f.Choices) > 0 {
				fmt.Fprintf(b, "\t(%s) compadd -- %s; return ;;\n", quoteAll(pats), strings.Join(f.Choices, " "))
			} else {
				valued = append(valued, pats...)
			}
		}
	}
	if len(valued) > 0 {
		fmt.Fprintf(b, "\t(%s) _files; return ;;\n", quoteAll(valued))
	}
	fmt.Fprintf(b, "\tesac\n")
	fmt.Fprintf(b, "\tif [[ $PREFIX == -* ]]; then\n\t\t_describe -t flags flag flags\n")
	fmt.Fprintf(b, "\telif [[ -n $files ]]; then\n\t\t_files\n")
	fmt.Fprintf(b, "\telse\n\t\t_describe -t commands command next\n\tfi\n}\n\n")
	fmt.Fprintf(b, "if [[ $funcstack[1] == %[1]s ]]; then\n\t%[1]s \"$@\"\nelse\n\tcompdef %[1]s %[2]s\nfi\n", fn, p.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

// fishQuote quotes s for fish: in single quotes only \ and ' are special.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// Fish writes fish completions: a function that prints the path typed
// so far, and one complete line per command, subcommand and flag, each
// guarded by the path it belongs to.
func Fish(w io.Writer, p *Program) error {
	all, groups := p.states()
	fn := "__" + strings.ReplaceAll(p.Name, "-", "_")
	b := new(strings.Builder)
	fmt.Fprintf(b, "# fish completion for %[1]s.\n# Load it with: %[1]s completion fish | source\n# or save it as ~/.config/fish/completions/%[1]s.fish\n\n", p.Name)
	fmt.Fprintf(b, "function %s_path\n\tset -l path\n\tfor w in (commandline -opc)[2..-1]\n", fn)
	fmt.Fprintf(b, "\t\tstring match -q -- '-*' $w; and continue\n\t\tset -l p (string join ' ' $path)\n")
	var gs []string
	for _, g := range groups {
		gs = append(gs, fishQuote(g))
	}
	fmt.Fprintf(b, "\t\tcontains -- \"$p\" %s; or break\n\t\tset -a path $w\n\tend\n\tstring join ' ' $path\nend\n\n", strings.Join(gs, " "))
	fmt.Fprintf(b, "function %[1]s_is\n\tset -l p (%[1]s_path)\n\ttest \"$p\" = \"$argv\"\nend\n\n", fn)
	fmt.Fprintf(b, "complete -c %s -f\n", p.Name)
	for _, s := range all {
		cond := fishQuote(fn + "_is " + fishQuote(s.path))
		for _, it := range s.next {
			fmt.Fprintf(b, "complete -c %s -n %s -a %s -d %s\n", p.Name, cond, fishQuote(it.name), fishQuote(brief(it.short, 60)))
		}
		for _, f := range s.flags {
			fmt.Fprintf(b, "complete -c %s -n %s -l %s", p.Name, cond, f.Name)
			if f.Shorthand != "" {
				fmt.Fprintf(b, " -s %s", f.Shorthand)
			}
			switch {
			case len(f.Choices) > 0:
				fmt.Fprintf(b, " -x -a %s", fishQuote(strings.Join(f.Choices, " ")))
			case f.Arg != "":
				fmt.Fprintf(b, " -r -F")
			}
			fmt.Fprintf(b, " -d %s\n", fishQuote(brief(f.Usage, 60)))
		}
		if s.files {
			fmt.Fprintf(b, "complete -c %s -n %s -F\n", p.Name, cond)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
